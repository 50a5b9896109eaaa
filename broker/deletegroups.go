package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteGroups is answered by the group coordinator (broker/group).
func (b *Broker) handleDeleteGroups(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.DeleteGroups(ctx, r.msg.(*kmsg.DeleteGroupsRequest))}, nil
}
