package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/txn"
)

// handleAddPartitionsToTxn adds partitions to a producer's transaction
// (v0–v3, the clients' versions), as Kafka checks it: Write on the
// transactional id (else every partition gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Write on each topic and the
// partition's existence (TOPIC_AUTHORIZATION_FAILED,
// UNKNOWN_TOPIC_OR_PARTITION; the other partitions then get
// OPERATION_NOT_ATTEMPTED and nothing is added); the coordinator's answer
// applies to all of them.
func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	codes := map[txn.TopicPartition]int16{}
	var tps []txn.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			if _, dup := codes[tp]; !dup {
				tps = append(tps, tp)
			}
			codes[tp] = 0
		}
	}
	all := func(code int16) {
		for tp := range codes {
			codes[tp] = code
		}
	}
	switch {
	case !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		all(errTxnAuth.Code)
	default:
		auth := b.topicAuthorizer(r, acl.OpWrite)
		snap := b.metadata()
		failed := false
		for _, tp := range tps {
			if !auth.allowed(tp.Topic) {
				codes[tp], failed = errTopicAuth.Code, true
			} else if _, ok := snap.Partition(tp.Topic, tp.Partition); !ok {
				codes[tp], failed = kerr.UnknownTopicOrPartition.Code, true
			}
		}
		if failed {
			for tp, c := range codes {
				if c == 0 {
					codes[tp] = kerr.OperationNotAttempted.Code
				}
			}
			break
		}
		if err := b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps); err != nil {
			all(txnErrorCode(err, req.Version, 2))
		}
	}
	byTopic := map[string]int{}
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, codes[tp]
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return kmsgReply{resp}, nil
}
