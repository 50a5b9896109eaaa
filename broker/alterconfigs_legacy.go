package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAlterConfigs is the legacy, non-incremental AlterConfigs that
// older tools send: a topic's overrides are replaced by exactly the given
// set (an empty set removes them all). The set is validated as
// IncrementalAlterConfigs validates (applyConfigOps; INVALID_CONFIG names
// the key) and written through the cluster by compare-and-set. Broker
// configs (dynconfig.go) are replaced the same way: the entity's dynamic
// configs become exactly the given set.
func (b *Broker) handleAlterConfigs(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, 0)
	defer cancel()
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		// Replacing inside the compare-and-set loop of UpdateTopicConfigs:
		// a concurrent alteration of another key is replaced too, as the
		// legacy API means.
		if code, msg := b.alterResource(ctx, r, rr.ResourceType, rr.ResourceName, legacyOps(rr.Configs), true, req.ValidateOnly); code != nil {
			sr.ErrorCode, sr.ErrorMessage = code.Code, kmsg.StringPtr(msg)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return kmsgReply{resp}, nil
}

// legacyOps are the legacy API's configs as sets of a replacing alteration.
func legacyOps(cs []kmsg.AlterConfigsRequestResourceConfig) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
	ops := make([]kmsg.IncrementalAlterConfigsRequestResourceConfig, 0, len(cs))
	for _, c := range cs {
		op := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		op.Name, op.Value, op.Op = c.Name, c.Value, kmsg.IncrementalAlterConfigOpSet
		ops = append(ops, op)
	}
	return ops
}
