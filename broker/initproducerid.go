package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleInitProducerID gives an idempotent producer a fresh producer id at
// epoch 0. Transactions are not supported, so a transactional id is refused.
// As in Kafka for non-transactional producers, a request carrying an
// existing id and epoch (v3+, KIP-360) also gets a fresh id.
func (b *Broker) handleInitProducerID(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		b.logger.Info("refusing transactional producer: transactions are not supported",
			"transactional_id", *req.TransactionalID)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return kmsgReply{resp}, nil
	}
	id, err := b.pids.allocate()
	if err != nil {
		b.logger.Error("allocating producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return kmsgReply{resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return kmsgReply{resp}, nil
}
