package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleHeartbeat is answered by the group coordinator (broker/group).
func (b *Broker) handleHeartbeat(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.Heartbeat(ctx, r.msg.(*kmsg.HeartbeatRequest))}, nil
}
