package broker

import (
	"context"
)

// handleDescribeGroups is answered by the group coordinator (broker/group).
func (b *Broker) handleDescribeGroups(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.describeGroupsAuthorized(ctx, r, b.groups)}, nil
}
