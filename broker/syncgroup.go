package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleSyncGroup is answered by the group coordinator (broker/group); it blocks
// until the rebalance answers it, or the client goes away (no response).
func (b *Broker) handleSyncGroup(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.SyncGroupRequest)
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = errGroupAuth.Code
		return kmsgReply{resp}, nil
	}
	resp := b.groups.SyncGroup(ctx, req)
	if resp == nil {
		return nil, nil
	}
	return kmsgReply{resp}, nil
}
