package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleEndTxn commits or aborts the producer's transaction (Write on the
// transactional id): answered once the coordinator has logged
// PrepareCommit or PrepareAbort; the markers follow in the background.
func (b *Broker) handleEndTxn(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	if !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = errTxnAuth.Code
		return kmsgReply{resp}, nil
	}
	if err := b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit); err != nil {
		resp.ErrorCode = txnErrorCode(err, req.Version, 2)
	}
	return kmsgReply{resp}, nil
}
