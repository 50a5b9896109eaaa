package broker

import (
	"context"
)

// handleDeleteGroups is answered by the group coordinator (broker/group).
func (b *Broker) handleDeleteGroups(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.deleteGroupsAuthorized(ctx, r, b.groups)}, nil
}
