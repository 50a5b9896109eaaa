package broker

import (
	"context"
)

// handleOffsetFetch is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetFetch(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.offsetFetchAuthorized(ctx, r, b.groups.OffsetFetch)}, nil
}
