package broker

import (
	"context"
)

// handleOffsetDelete is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetDelete(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.offsetDeleteAuthorized(ctx, r, b.groups)}, nil
}
