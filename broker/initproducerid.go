package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// producerIDWait bounds the reservation of a producer id block in the
// coordinator.
const producerIDWait = 10 * time.Second

// handleInitProducerID gives an idempotent producer a fresh producer id at
// epoch 0; as in Kafka for non-transactional producers, a request carrying
// an existing id and epoch (v3+, KIP-360) also gets a fresh id. A
// transactional producer is served by the transaction coordinator
// (broker/txn): its id's producer id at a bumped epoch, older instances
// fenced.
func (b *Broker) handleInitProducerID(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// An idempotent producer needs IdempotentWrite on the cluster or Write
	// on some topic (Kafka 2.8, KIP-679).
	if req.TransactionalID == nil && !b.authorizeQuiet(r, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) &&
		!b.authorizeAnyTopicWrite(r) {
		resp.ErrorCode = errClusterAuth.Code
		return kmsgReply{resp}, nil
	}
	if req.TransactionalID != nil {
		if !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID) {
			resp.ErrorCode = errTxnAuth.Code
			return kmsgReply{resp}, nil
		}
		pid, epoch, err := b.txns.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
		if err != nil {
			resp.ErrorCode = txnErrorCode(err, req.Version, 4)
			return kmsgReply{resp}, nil
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		return kmsgReply{resp}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, producerIDWait)
	defer cancel()
	id, err := b.pids.allocate(ctx)
	if err != nil {
		b.logger.Error("allocating producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		if b.pids.remote != nil {
			// The coordinator did not answer: the client may retry.
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return kmsgReply{resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return kmsgReply{resp}, nil
}

// txnErrorCode is the code of a transaction coordinator's error as a
// request of version v gets it: PRODUCER_FENCED (KIP-588) only from
// fencedSince on, INVALID_PRODUCER_EPOCH before, as Kafka answers.
func txnErrorCode(err error, v, fencedSince int16) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	if ke == kerr.ProducerFenced && v < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return ke.Code
}
