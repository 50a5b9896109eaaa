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
//
// v4 is the brokers' form (KIP-890): transactions batched, each either
// verify-only (a partition leader asking whether partitions are in the
// producer's ongoing transaction before it appends a first transactional
// batch, see txnverify.go; nothing changes) or an add. It needs
// ClusterAction on the cluster, else the top-level error
// CLUSTER_AUTHORIZATION_FAILED and no results, as in Kafka.
func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	if req.Version >= 4 {
		b.addPartitionsToTxnBatch(r, req, resp)
		return kmsgReply{resp}, nil
	}
	var tps []txn.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	codes, tps := b.addPartitions(r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Version, tps, true)
	topics, parts := txn.ByTopic(tps)
	for i, topic := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = topic
		for _, p := range parts[i] {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return kmsgReply{resp}, nil
}

// addPartitions is one transaction's add: the error code of each
// partition, and the partitions without duplicates in request order. The
// transactional id's Write is checked when idACL (the clients' versions;
// v4 is authorized as a whole).
func (b *Broker) addPartitions(r *request, id string, pid int64, epoch, version int16, in []txn.TopicPartition, idACL bool) (map[txn.TopicPartition]int16, []txn.TopicPartition) {
	codes := map[txn.TopicPartition]int16{}
	var tps []txn.TopicPartition
	for _, tp := range in {
		if _, dup := codes[tp]; !dup {
			tps = append(tps, tp)
		}
		codes[tp] = 0
	}
	all := func(code int16) {
		for tp := range codes {
			codes[tp] = code
		}
	}
	if idACL && !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, id) {
		all(errTxnAuth.Code)
		return codes, tps
	}
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
		return codes, tps
	}
	if err := b.txns.AddPartitions(id, pid, epoch, tps); err != nil {
		all(txnErrorCode(err, version, 2))
	}
	return codes, tps
}

// addPartitionsToTxnBatch answers v4: each transaction verified (Kafka's
// handleVerifyPartitionsInTransaction: a partition not in the ongoing
// transaction gets INVALID_TXN_STATE, an error of the transaction goes to
// all its partitions) or added.
func (b *Broker) addPartitionsToTxnBatch(r *request, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) {
	if !b.authorizeCluster(r, acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return
	}
	for _, t := range req.Transactions {
		var tps []txn.TopicPartition
		seen := map[txn.TopicPartition]bool{}
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				if tp := (txn.TopicPartition{Topic: rt.Topic, Partition: p}); !seen[tp] {
					seen[tp] = true
					tps = append(tps, tp)
				}
			}
		}
		var codes map[txn.TopicPartition]int16
		if t.VerifyOnly {
			codes = b.verifyLocal(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps)
		} else {
			codes, tps = b.addPartitions(r, t.TransactionalID, t.ProducerID, t.ProducerEpoch, req.Version, tps, false)
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		topics, parts := txn.ByTopic(tps)
		for i, topic := range topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = topic
			for _, p := range parts[i] {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: topic, Partition: p}]
				tt.Partitions = append(tt.Partitions, rp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
}

// verifyLocal asks this broker's coordinator whether tps are in id's
// ongoing transaction: the v4 answer per partition (0, INVALID_TXN_STATE,
// or the transaction's error for all).
func (b *Broker) verifyLocal(id string, pid int64, epoch int16, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	codes := make(map[txn.TopicPartition]int16, len(tps))
	if id == "" {
		for _, tp := range tps {
			codes[tp] = kerr.InvalidRequest.Code
		}
		return codes
	}
	in, err := b.txns.VerifyPartitions(id, pid, epoch, tps)
	for i, tp := range tps {
		switch {
		case err != nil:
			codes[tp] = txnErrorCode(err, 4, 2)
		case !in[i]:
			codes[tp] = kerr.InvalidTxnState.Code
		default:
			codes[tp] = 0
		}
	}
	return codes
}
