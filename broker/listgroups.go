package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListGroups is answered by the group coordinator (broker/group).
func (b *Broker) handleListGroups(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.listGroupsAuthorized(r, b.groups.ListGroups(ctx, r.msg.(*kmsg.ListGroupsRequest)))}, nil
}
