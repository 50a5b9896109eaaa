package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetDelete is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetDelete(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.OffsetDelete(ctx, r.msg.(*kmsg.OffsetDeleteRequest))}, nil
}
