package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleJoinGroup is answered by the group coordinator (broker/group); it blocks
// until the rebalance answers it, or the client goes away (no response).
func (b *Broker) handleJoinGroup(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.JoinGroupRequest)
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = errGroupAuth.Code, -1
		return kmsgReply{resp}, nil
	}
	resp := b.groups.JoinGroup(ctx, req, clientIDOf(r), clientHost(r))
	if resp == nil {
		return nil, nil
	}
	return kmsgReply{resp}, nil
}
