package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/group"
)

// consumerGroupTopics lists the cluster's topics with their ids for the
// coordinator's consumer-protocol subscriptions; topics without an id yet
// are left out.
func (b *Broker) consumerGroupTopics() map[string]group.TopicMeta {
	snap := b.metadata()
	out := make(map[string]group.TopicMeta, len(snap.Topics))
	for name, t := range snap.Topics {
		if t.ID == "" || t.Deleting {
			continue
		}
		out[name] = group.TopicMeta{ID: wireTopicID(t.ID), Partitions: int32(len(t.Partitions))}
	}
	return out
}

// handleConsumerGroupHeartbeat is answered by the group coordinator
// (broker/group): Read on the group, as Kafka checks.
func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = errGroupAuth.Code
		return kmsgReply{resp}, nil
	}
	return kmsgReply{b.groups.ConsumerGroupHeartbeat(ctx, req, clientIDOf(r), clientHost(r))}, nil
}
