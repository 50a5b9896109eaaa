package broker

import (
	"context"
)

// handleOffsetCommit is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetCommit(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.offsetCommitAuthorized(ctx, r, b.groups.OffsetCommit)}, nil
}
