package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
)

// handleIncrementalAlterConfigs sets, deletes, appends to or subtracts
// from topic config overrides. The new overrides are validated as a whole
// (INVALID_CONFIG names the key) and written to /config/topics/<topic> by
// compare-and-set; every broker then applies them (see reconcileTopic). The
// response does not wait for that. BROKER resources alter the dynamic
// broker configs (dynconfig.go): a broker id's, or with the empty name the
// cluster-wide default.
func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, 0)
	defer cancel()
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code, msg := b.alterResource(ctx, r, rr.ResourceType, rr.ResourceName, rr.Configs, false, req.ValidateOnly); code != nil {
			sr.ErrorCode, sr.ErrorMessage = code.Code, kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kmsgReply{resp}, nil
}

// alterResource alters one resource of IncrementalAlterConfigs or, with
// replace, of the legacy AlterConfigs (ops then are sets of the whole new
// set): after the authorization check, a broker's dynamic configs or a
// topic's overrides.
func (b *Broker) alterResource(ctx context.Context, r *request, typ kmsg.ConfigResourceType, name string,
	ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, replace, validateOnly bool) (*kerr.Error, string) {
	if code := b.configAuthError(r, acl.OpAlterConfigs, typ, name); code != nil {
		return code, code.Message
	}
	if typ == kmsg.ConfigResourceTypeBroker {
		return b.alterBrokerConfigs(ctx, name, ops, replace, validateOnly)
	}
	if code, msg := b.alterableTopic(typ, name); code != nil {
		return code, msg
	}
	return b.alterTopicConfigs(ctx, name, ops, replace, validateOnly)
}

// alterableTopic refuses a topic config resource that cannot be altered:
// another type (INVALID_REQUEST), an unknown topic.
func (b *Broker) alterableTopic(typ kmsg.ConfigResourceType, name string) (*kerr.Error, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	default:
		return kerr.InvalidRequest, fmt.Sprintf("unsupported resource type %s", typ)
	}
	if _, ok := b.metadata().Topics[name]; !ok {
		return kerr.UnknownTopicOrPartition, "topic " + name + " does not exist"
	}
	return nil, ""
}

// alterTopicConfigs applies ops to the topic's stored overrides (with
// replace, to none: the legacy AlterConfigs) and, unless validateOnly,
// writes them back through the cluster (a compare-and-set redone on top of
// concurrent alterations).
func (b *Broker) alterTopicConfigs(ctx context.Context, topic string,
	ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, replace, validateOnly bool,
) (*kerr.Error, string) {
	if validateOnly {
		current := maps.Clone(b.metadata().Topics[topic].Configs)
		if current == nil || replace {
			current = map[string]string{}
		}
		return b.applyConfigOps(current, ops)
	}
	var code *kerr.Error
	var msg string
	written, err := b.member.UpdateTopicConfigs(ctx, topic, func(configs map[string]string) error {
		if replace {
			clear(configs)
		}
		if code, msg = b.applyConfigOps(configs, ops); code != nil {
			return errConfigRejected
		}
		return nil
	})
	switch {
	case code != nil:
		return code, msg
	case err != nil:
		return adminError(err), err.Error()
	}
	b.logger.Info("topic configs altered", "topic", topic, "configs", written)
	return nil, ""
}

// errConfigRejected aborts an update whose operations applyConfigOps
// refused; the Kafka error it chose is returned instead.
var errConfigRejected = errors.New("broker: config alteration rejected")

// applyConfigOps changes overrides in place and validates the result.
func (b *Broker) applyConfigOps(overrides map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (*kerr.Error, string) {
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return kerr.InvalidRequest, "config " + op.Name + " is altered more than once"
		}
		seen[op.Name] = true
		k, known := config.FindTopicKey(op.Name)
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
			if k.Type != kmsg.ConfigTypeList {
				return kerr.InvalidConfig, fmt.Sprintf("Config value append or subtract is not allowed for config key: %s", op.Name)
			}
			current, ok := overrides[op.Name]
			if !ok {
				current = k.Value(b.topicDefaults())
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
	if _, err := config.ResolveTopic(b.topicDefaults(), overrides); err != nil {
		return kerr.InvalidConfig, strings.TrimPrefix(err.Error(), config.ErrInvalidTopicConfig.Error()+": ")
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
