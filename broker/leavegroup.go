package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleLeaveGroup is answered by the group coordinator (broker/group).
func (b *Broker) handleLeaveGroup(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.LeaveGroupRequest)
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = errGroupAuth.Code
		return kmsgReply{resp}, nil
	}
	return kmsgReply{b.groups.LeaveGroup(ctx, req)}, nil
}
