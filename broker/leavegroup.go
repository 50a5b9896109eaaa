package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleLeaveGroup is answered by the group coordinator (broker/group).
func (b *Broker) handleLeaveGroup(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.LeaveGroup(ctx, r.msg.(*kmsg.LeaveGroupRequest))}, nil
}
