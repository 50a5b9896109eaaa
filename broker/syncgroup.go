package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSyncGroup is answered by the group coordinator (broker/group); it blocks
// until the rebalance answers it, or the client goes away (no response).
func (b *Broker) handleSyncGroup(ctx context.Context, r *request) (reply, error) {
	resp := b.groups.SyncGroup(ctx, r.msg.(*kmsg.SyncGroupRequest))
	if resp == nil {
		return nil, nil
	}
	return kmsgReply{resp}, nil
}
