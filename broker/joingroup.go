package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleJoinGroup is answered by the group coordinator (broker/group); it blocks
// until the rebalance answers it, or the client goes away (no response).
func (b *Broker) handleJoinGroup(ctx context.Context, r *request) (reply, error) {
	resp := b.groups.JoinGroup(ctx, r.msg.(*kmsg.JoinGroupRequest), clientIDOf(r), clientHost(r))
	if resp == nil {
		return nil, nil
	}
	return kmsgReply{resp}, nil
}
