package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/txn"
)

// handleProduce appends each partition's record batches to its log. A
// partition this broker does not lead gets NOT_LEADER_OR_FOLLOWER, one of
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION. With acks=0 nothing is sent
// back; acks=1 answers once the leader appended; acks=-1 (all) refuses
// with NOT_ENOUGH_REPLICAS while the ISR is smaller than
// min.insync.replicas, and otherwise answers once every in-sync replica has
// the batches (the high watermark passed them), or REQUEST_TIMED_OUT after
// the request's timeout. Nothing of a partition is written when any of its
// batches is rejected. A request with a transactional.id needs Write on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the log judges transactional
// batches (see broker/partlog: Transactions), after the transaction
// coordinator verified the first batch of a transaction on a partition
// (KIP-890, txnverify.go: INVALID_TXN_STATE when the partition is not in
// the producer's transaction).
func (b *Broker) handleProduce(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.Version)
	var snap *cluster.Snapshot // read only when a partition is not served here
	var pending []pendingAck   // acks=all appends waiting for the ISR
	// A transactional producer needs Write on its transactional id, as in
	// Kafka; its batches are then checked by the log (producer id and
	// epoch, no control batches, see broker/partlog).
	txnOK := req.TransactionID == nil || b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)
	writable := make([]bool, len(req.Topics))
	for i, rt := range req.Topics {
		writable[i] = b.authorizeTopic(r, acl.OpWrite, rt.Topic)
	}
	verified := b.verifyProduce(ctx, req, txnOK, writable)
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			v := verified[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			switch {
			case !txnOK:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case !writable[ti]:
				sp.ErrorCode = errTopicAuth.Code
			case p == nil:
				if snap == nil {
					s := b.metadata()
					snap = &s
				}
				sp.ErrorCode = unservedCode(*snap, rt.Topic, rp.Partition)
				if err := b.res.failures.LastError(rt.Topic, rp.Partition); err != nil && b.leads(*snap, rt.Topic, rp.Partition) {
					// Led here but it could not be opened: say why.
					sp.ErrorCode = kerr.KafkaStorageError.Code
					sp.ErrorMessage = kmsg.StringPtr("partition cannot be opened on this broker: " + err.Error())
				}
			case req.Acks == -1 && p.ISRSize() < int(p.Config().MinInsyncReplicas):
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				sp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("the partition has %d in-sync replicas, fewer than min.insync.replicas=%d",
					p.ISRSize(), p.Config().MinInsyncReplicas))
			case v != nil && v.code != 0:
				sp.ErrorCode = v.code
				sp.ErrorMessage = kmsg.StringPtr(v.message())
			default:
				var end int64
				if t := v.take(); t == nil {
					end = b.appendPartition(p, rp.Records, &sp)
				} else if !t.appendIf(func() { end = b.appendPartition(p, rp.Records, &sp) }) {
					end = -1
					sp.ErrorCode = kerr.InvalidTxnState.Code
					sp.ErrorMessage = kmsg.StringPtr("the transaction ended while the partition was verified")
				}
				if end >= 0 && req.Acks == -1 {
					pending = append(pending, pendingAck{topic: len(resp.Topics), part: len(st.Partitions), p: p, end: end})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, v := range verified {
		if t := v.take(); t != nil {
			t.release() // refused before its append
		}
	}
	b.throttleProduce(r)
	if req.Acks == 0 {
		if r.throttle > 0 && r.conn != nil {
			r.conn.mute(r.throttle) // no response to carry it, as in Kafka
		}
		return nil, nil
	}
	if len(pending) > 0 {
		waitStart := time.Now()
		b.awaitAcks(ctx, req, resp, pending)
		r.waited = time.Since(waitStart)
	}
	return kmsgReply{resp}, nil
}

// pendingAck is an acks=all append: resp.Topics[topic].Partitions[part]
// is answered once p's high watermark passes end.
type pendingAck struct {
	topic, part int
	p           *partition.Replica
	end         int64
}

// awaitAcks waits, up to the request's timeout, until every in-sync
// replica has each pending append, and sets the error of those that did
// not get there: REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER when this broker
// stopped leading meanwhile, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
// ISR shrank below min.insync.replicas (the records may still be
// committed: Kafka's answer, which an idempotent producer retries safely).
func (b *Broker) awaitAcks(ctx context.Context, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, pending []pendingAck) {
	targets := map[*partition.Replica]int64{}
	for _, pa := range pending {
		targets[pa.p] = max(targets[pa.p], pa.end)
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	short := b.partitions.WaitCommitted(ctx, deadline, targets)
	for _, pa := range pending {
		if !short[pa.p] || pa.p.HighWatermark() >= pa.end {
			continue
		}
		sp := &resp.Topics[pa.topic].Partitions[pa.part]
		switch {
		case !pa.p.Leading():
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		case pa.p.ISRSize() < int(pa.p.Config().MinInsyncReplicas):
			sp.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
		default:
			sp.ErrorCode = kerr.RequestTimedOut.Code
		}
		sp.BaseOffset = -1
	}
}

// appendPartition appends records to p's log and fills sp. It returns the
// offset after the last record appended, -1 when nothing was (an error, or
// an idempotent duplicate already in the log: that one is returned too,
// since acks=all must also wait for a duplicate to be committed).
func (b *Broker) appendPartition(p *partition.Replica, records []byte, sp *kmsg.ProduceResponseTopicPartition) int64 {
	conf := p.Config()
	var count int64
	var tooLarge, badMagic bool
	err := scanBatches(records, func(in batchInfo) {
		count += int64(in.records)
		tooLarge = tooLarge || in.size > int(conf.MaxMessageBytes)
		badMagic = badMagic || in.magic != currentMagic
	})
	switch {
	case err != nil:
		sp.ErrorCode = kerr.CorruptMessage.Code
		sp.ErrorMessage = kmsg.StringPtr(err.Error())
		return -1
	case tooLarge:
		sp.ErrorCode = kerr.MessageTooLarge.Code
		sp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("a record batch is larger than the topic's max.message.bytes=%d", conf.MaxMessageBytes))
		return -1
	case badMagic:
		sp.ErrorCode = kerr.UnsupportedForMessageFormat.Code
		return -1
	}
	if conf.Log.CleanupPolicy != config.PolicyDelete {
		if err := requireKeys(records, b.decompressor); err != nil {
			sp.ErrorCode = kerr.InvalidRecord.Code
			sp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("%v in topic partition %s-%d", err, p.Topic(), p.Partition()))
			return -1
		}
	}
	// The leader epoch goes into every batch (outside its CRC), as Kafka's
	// leader does: it is how replicas find where their logs diverge.
	stampLeaderEpoch(records, p.LeaderEpoch())
	if conf.LogAppendTime {
		sp.LogAppendTime = time.Now().UnixMilli()
		stampLogAppendTime(records, sp.LogAppendTime)
	}
	res, err := p.Log().Append(records)
	if err != nil {
		sp.ErrorCode = partition.ErrorCode(err)
		sp.ErrorMessage = kmsg.StringPtr(err.Error())
		lvl := slog.LevelWarn
		if sp.ErrorCode == kerr.KafkaStorageError.Code || sp.ErrorCode == kerr.UnknownServerError.Code {
			lvl = slog.LevelError
		}
		// Once a second per error code at most: a client retrying a bad
		// batch in a loop must not fill the disk with logs.
		b.res.logs.log(lvl, "produce-rejected-"+strconv.Itoa(int(sp.ErrorCode)), "produce rejected", "topic", p.Topic(), "partition", p.Partition(),
			"code", kerr.ErrorForCode(sp.ErrorCode).Error(), "err", err)
		return -1
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogStartOffset = res.LogStartOffset
	if res.Duplicate {
		b.metrics.duplicates.WithLabelValues(p.Topic()).Inc()
		b.logger.Debug("duplicate batch from idempotent producer", "topic", p.Topic(), "partition", p.Partition(), "base_offset", res.BaseOffset)
		return res.LastOffset + 1
	}
	b.metrics.bytesIn.WithLabelValues(p.Topic()).Add(float64(len(records)))
	b.metrics.recordsIn.WithLabelValues(p.Topic()).Add(float64(count))
	b.metrics.observeOffsets(p)
	p.Wake()
	return res.LastOffset + 1
}

// produceVerify is a partition's KIP-890 verification: its Produce error
// code (0: in the transaction), and the ticket that holds it until the
// append.
type produceVerify struct {
	code   int16
	ticket *txnGuardTicket
}

// take returns the ticket for the partition's one append, nil when there
// is none (or it was taken: a partition named twice).
func (v *produceVerify) take() *txnGuardTicket {
	if v == nil {
		return nil
	}
	t := v.ticket
	v.ticket = nil
	return t
}

func (v *produceVerify) message() string {
	if v.code == kerr.InvalidTxnState.Code {
		return "the partition was not added to the transaction"
	}
	return "the partition could not be verified in the transaction: " + kerr.ErrorForCode(v.code).Error()
}

// verifyProduce verifies, in one question to the coordinator, the
// partitions of a transactional request whose first batch would start the
// producer's transaction on a partition led here (see txnverify.go). The
// partitions left out append without a check.
func (b *Broker) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest, txnOK bool, writable []bool) map[txn.TopicPartition]*produceVerify {
	if req.TransactionID == nil || !txnOK || b.cfg.DisableTxnVerification || (req.Acks != 0 && req.Acks != 1 && req.Acks != -1) {
		return nil
	}
	out := map[txn.TopicPartition]*produceVerify{}
	var tps []txn.TopicPartition
	var pid int64 = -1
	var epoch int16
	for ti, rt := range req.Topics {
		if !writable[ti] {
			continue
		}
		for _, rp := range rt.Partitions {
			bpid, bepoch, ok := txnBatchProducer(rp.Records)
			if !ok {
				continue
			}
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if _, dup := out[tp]; dup {
				continue
			}
			if pid >= 0 && (bpid != pid || bepoch != epoch) {
				// One producer per transactional request, as in Kafka.
				out[tp] = &produceVerify{code: kerr.InvalidProducerIDMapping.Code}
				continue
			}
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			if p == nil || !p.Leading() || !b.needsTxnVerify(p, bpid) {
				continue
			}
			pid, epoch = bpid, bepoch
			out[tp] = &produceVerify{ticket: b.txnGuards.begin(tp.Topic, tp.Partition, pid)}
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return out
	}
	for tp, code := range b.verifyTxn(ctx, *req.TransactionID, pid, epoch, tps) {
		if v := out[tp]; v.ticket != nil && code != 0 {
			v.code = code
			v.ticket.release()
			v.ticket = nil
		}
	}
	return out
}
