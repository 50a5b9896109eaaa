package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/coord"
)

// topicConfigsRoot is Kafka's /config/topics: a topic's overrides live in
// the node named after it, as {"version":1,"config":{...}} (frozen).
const topicConfigsRoot = "/config/topics"

// alterConfigAttempts bounds the compare-and-set retries of one alteration
// racing others.
const alterConfigAttempts = 5

// handleIncrementalAlterConfigs sets, deletes, appends to or subtracts
// from topic config overrides. The new overrides are validated as a whole
// (INVALID_CONFIG names the key) and written to /config/topics/<topic> by
// compare-and-set; every broker then applies them (see reconcileTopic). The
// response does not wait for that. Broker configs are static:
// INVALID_REQUEST.
func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, 0)
	defer cancel()
	var s coord.Session
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := func() (*kerr.Error, string) {
			switch rr.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
			case kmsg.ConfigResourceTypeBroker:
				return kerr.InvalidRequest, "broker configs cannot be altered at run time; set them in server.properties"
			default:
				return kerr.InvalidRequest, fmt.Sprintf("unsupported resource type %s", rr.ResourceType)
			}
			if _, ok := b.metadata().Topics[rr.ResourceName]; !ok {
				return kerr.UnknownTopicOrPartition, "topic " + rr.ResourceName + " does not exist"
			}
			if s == nil {
				var err error
				if s, err = b.connect(ctx); err != nil {
					return adminError(err), err.Error()
				}
			}
			return b.alterTopicConfigs(ctx, s, rr.ResourceName, rr.Configs, req.ValidateOnly)
		}()
		if code != nil {
			sr.ErrorCode, sr.ErrorMessage = code.Code, kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kmsgReply{resp}, nil
}

// alterTopicConfigs applies ops to the topic's stored overrides and writes
// them back unless validateOnly.
func (b *Broker) alterTopicConfigs(ctx context.Context, s coord.Session, topic string,
	ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool,
) (*kerr.Error, string) {
	path := topicConfigsRoot + "/" + topic
	for range alterConfigAttempts {
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			return adminError(err), err.Error()
		}
		rec := topicConfigRecord{Version: 1, Config: map[string]string{}}
		if exists {
			if err := json.Unmarshal(data, &rec); err != nil {
				return kerr.KafkaStorageError, fmt.Sprintf("%s holds malformed JSON: %v", path, err)
			}
			if rec.Config == nil {
				rec.Config = map[string]string{}
			}
		}
		if code, msg := b.applyConfigOps(rec.Config, ops); code != nil {
			return code, msg
		}
		if validateOnly {
			return nil, ""
		}
		out, _ := json.Marshal(rec)
		if exists {
			_, err = s.Set(ctx, path, out, st.Version)
		} else {
			_, err = s.Create(ctx, path, out, coord.Persistent)
		}
		switch {
		case err == nil:
			b.logger.Info("topic configs altered", "topic", topic, "configs", publicConfigs(rec.Config))
			return nil, ""
		case errors.Is(err, coord.ErrBadVersion), errors.Is(err, coord.ErrNodeExists):
			continue // another alteration won the race: redo ours on top of it
		default:
			return adminError(err), err.Error()
		}
	}
	return kerr.RequestTimedOut, "too many concurrent alterations of " + topic + "; retry"
}

// applyConfigOps changes overrides in place and validates the result.
func (b *Broker) applyConfigOps(overrides map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (*kerr.Error, string) {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return kerr.InvalidRequest, "config " + op.Name + " is altered more than once"
		}
		seen[op.Name] = true
		k, known := findTopicConfigKey(op.Name)
		if !known {
			return kerr.InvalidConfig, "Unknown topic config name: " + op.Name
		}
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return kerr.InvalidConfig, "Null value not supported for topic configs: " + op.Name
			}
			overrides[op.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(overrides, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if k.typ != kmsg.ConfigTypeList {
				return kerr.InvalidConfig, fmt.Sprintf("Config value append or subtract is not allowed for config key: %s", op.Name)
			}
			current, ok := overrides[op.Name]
			if !ok {
				current = k.value(b.cfg.topicDefaults())
			}
			items := strings.Split(current, ",")
			for _, v := range strings.Split(value, ",") {
				if op.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, v) {
					items = append(items, v)
				}
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			overrides[op.Name] = strings.Join(items, ",")
		default:
			return kerr.InvalidRequest, fmt.Sprintf("unknown config operation %d for %s", op.Op, op.Name)
		}
	}
	if _, err := resolveTopicConfig(b.cfg.topicDefaults(), publicConfigs(overrides), false); err != nil {
		return kerr.InvalidConfig, strings.TrimPrefix(err.Error(), ErrInvalidTopicConfig.Error()+": ")
	}
	return nil, ""
}

// adminError is adminErrorCode as a *kerr.Error.
func adminError(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(adminErrorCode(err)), &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// publicConfigs returns overrides without the reserved topic id.
func publicConfigs(overrides map[string]string) map[string]string {
	out := maps.Clone(overrides)
	delete(out, topicIDConfig)
	return out
}
