package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetFetch is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetFetch(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.OffsetFetch(ctx, r.msg.(*kmsg.OffsetFetchRequest))}, nil
}
