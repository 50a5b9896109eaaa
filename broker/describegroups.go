package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeGroups is answered by the group coordinator (broker/group).
func (b *Broker) handleDescribeGroups(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.DescribeGroups(ctx, r.msg.(*kmsg.DescribeGroupsRequest))}, nil
}
