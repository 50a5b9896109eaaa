package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
)

// handleProduce appends each partition's record batches to its log. A
// partition this broker does not lead gets NOT_LEADER_OR_FOLLOWER, one of
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION. With
// acks=0 nothing is sent back; acks=-1 is acks=1, since every partition has
// one replica. Nothing of a partition is written when any of its batches is
// rejected.
func (b *Broker) handleProduce(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.Version)
	var snap *cluster.Snapshot // read only when a partition is not served here
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := b.partitionOf(rt.Topic, rp.Partition)
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			switch {
			case req.TransactionID != nil:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case p == nil:
				if snap == nil {
					s := b.metadata()
					snap = &s
				}
				sp.ErrorCode = unservedCode(*snap, rt.Topic, rp.Partition)
				if err := b.res.failures.lastError(rt.Topic, rp.Partition); err != nil && b.leads(*snap, rt.Topic, rp.Partition) {
					// Led here but it could not be opened: say why.
					sp.ErrorCode = kerr.KafkaStorageError.Code
					sp.ErrorMessage = kmsg.StringPtr("partition cannot be opened on this broker: " + err.Error())
				}
			default:
				b.appendPartition(p, rp.Records, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil, nil
	}
	return kmsgReply{resp}, nil
}

func (b *Broker) appendPartition(p *partition, records []byte, sp *kmsg.ProduceResponseTopicPartition) {
	conf := p.conf.Load()
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
		return
	case tooLarge:
		sp.ErrorCode = kerr.MessageTooLarge.Code
		sp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("a record batch is larger than the topic's max.message.bytes=%d", conf.MaxMessageBytes))
		return
	case badMagic:
		sp.ErrorCode = kerr.UnsupportedForMessageFormat.Code
		return
	}
	if conf.LogAppendTime {
		sp.LogAppendTime = time.Now().UnixMilli()
		stampLogAppendTime(records, sp.LogAppendTime)
	}
	res, err := p.log.Append(records)
	if err != nil {
		sp.ErrorCode = storageErrorCode(err)
		sp.ErrorMessage = kmsg.StringPtr(err.Error())
		lvl := slog.LevelWarn
		if sp.ErrorCode == kerr.KafkaStorageError.Code || sp.ErrorCode == kerr.UnknownServerError.Code {
			lvl = slog.LevelError
		}
		// Once a second per error code at most: a client retrying a bad
		// batch in a loop must not fill the disk with logs.
		b.res.logs.log(lvl, "produce-rejected-"+strconv.Itoa(int(sp.ErrorCode)), "produce rejected", "topic", p.topic, "partition", p.index,
			"code", kerr.ErrorForCode(sp.ErrorCode).Error(), "err", err)
		return
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogStartOffset = res.LogStartOffset
	if res.Duplicate {
		b.metrics.duplicates.WithLabelValues(p.topic).Inc()
		b.logger.Debug("duplicate batch from idempotent producer", "topic", p.topic, "partition", p.index, "base_offset", res.BaseOffset)
		return
	}
	b.metrics.bytesIn.WithLabelValues(p.topic).Add(float64(len(records)))
	b.metrics.recordsIn.WithLabelValues(p.topic).Add(float64(count))
	b.metrics.observeOffsets(p)
	p.wake()
}
