package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleHeartbeat is answered by the group coordinator (broker/group).
func (b *Broker) handleHeartbeat(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.HeartbeatRequest)
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = errGroupAuth.Code
		return kmsgReply{resp}, nil
	}
	return kmsgReply{b.groups.Heartbeat(ctx, req)}, nil
}
