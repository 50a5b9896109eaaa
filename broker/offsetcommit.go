package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetCommit is answered by the group coordinator (broker/group).
func (b *Broker) handleOffsetCommit(ctx context.Context, r *request) (reply, error) {
	return kmsgReply{b.groups.OffsetCommit(ctx, r.msg.(*kmsg.OffsetCommitRequest))}, nil
}
