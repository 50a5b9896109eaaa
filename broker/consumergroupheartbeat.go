package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/group"
)

// The consumer group protocol's keys (KIP-848), with the feature; the
// table is config.go's.
var consumerGroupPropertySetters = map[string]func(c *Config, v string) error{
	"group.consumer.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.ConsumerSessionTimeout, v)
	},
	"group.consumer.heartbeat.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.ConsumerHeartbeatInterval, v)
	},
	"group.consumer.max.size": func(c *Config, v string) error { return setPositiveInt32(&c.Groups.ConsumerMaxSize, v) },
	"group.consumer.assignors": func(c *Config, v string) error {
		var names []string
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		c.Groups.ConsumerAssignors = names
		return nil
	},
}

func init() {
	for k, set := range consumerGroupPropertySetters {
		propertySetters[k] = set
	}
}

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
