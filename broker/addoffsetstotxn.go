package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/txn"
)

// handleAddOffsetsToTxn adds the group's partition of __consumer_offsets to
// the producer's transaction, so that the offsets it then commits with
// TxnOffsetCommit get the transaction's marker. Kafka's checks: Write on
// the transactional id, Read on the group.
func (b *Broker) handleAddOffsetsToTxn(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	switch {
	case !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.ErrorCode = errTxnAuth.Code
	case !b.authorizeGroup(r, acl.OpRead, req.Group):
		resp.ErrorCode = errGroupAuth.Code
	default:
		tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: b.groups.PartitionFor(req.Group)}
		if err := b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}); err != nil {
			resp.ErrorCode = txnErrorCode(err, req.Version, 2)
		}
	}
	return kmsgReply{resp}, nil
}
