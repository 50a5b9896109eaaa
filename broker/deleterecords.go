package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/partition"
)

// errNoRecordDeletion: the partition's storage cannot move its log start.
var errNoRecordDeletion = errors.New("broker: this partition's storage does not delete records")

// handleDeleteRecords moves the log start offset of partitions this broker
// leads up to the requested offset (-1: the high watermark), as Kafka's
// DeleteRecords: reads, ListOffsets earliest and retention follow the new
// start, and followers take it from the LogStartOffset of their next fetch
// response (broker/partition's fetcher.go). An offset past the high watermark, or
// negative other than -1, is OFFSET_OUT_OF_RANGE and changes nothing. As
// Kafka's DelayedDeleteRecords, the answer waits until the low watermark
// (the lowest log start of the leader and its in-sync followers, as their
// fetches report it) reaches the offset, and gives it; past the request's
// timeout the partition gets REQUEST_TIMED_OUT (the start moves anyway).
func (b *Broker) handleDeleteRecords(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	type moved struct {
		sp     *kmsg.DeleteRecordsResponseTopicPartition
		p      *partition.Replica
		offset int64
	}
	var waits []moved
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		deletable := b.authorizeTopic(r, acl.OpDelete, rt.Topic)
		for i, rp := range rt.Partitions {
			sp := &st.Partitions[i]
			sp.Default()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if !deletable {
				sp.ErrorCode = errTopicAuth.Code
				continue
			}
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = unservedCode(b.metadata(), rt.Topic, rp.Partition)
				continue
			}
			var offset int64
			if offset, sp.ErrorCode = b.deleteRecords(p, rp.Offset); sp.ErrorCode == 0 {
				waits = append(waits, moved{sp, p, offset})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	// The pointers stay valid: resp.Topics' partition slices are not
	// appended to any more.
	for _, w := range waits {
		w.sp.LowWatermark, w.sp.ErrorCode = b.awaitLowWatermark(ctx, w.p, w.offset)
	}
	return kmsgReply{resp}, nil
}

// deleteRecords moves p's log start up to offset and returns the offset it
// moved to.
func (b *Broker) deleteRecords(p *partition.Replica, offset int64) (int64, int16) {
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code
	}
	d, ok := p.Log().(partition.RecordDeleter)
	if !ok {
		return -1, partition.ErrorCode(errNoRecordDeletion)
	}
	start, err := d.DeleteRecordsBefore(offset)
	if err != nil {
		b.logger.Warn("deleting records", "topic", p.Topic(), "partition", p.Partition(), "offset", offset, "err", err)
		return -1, partition.ErrorCode(fmt.Errorf("%s-%d: %w", p.Topic(), p.Partition(), err))
	}
	b.logger.Info("records deleted", "topic", p.Topic(), "partition", p.Partition(), "log_start_offset", start)
	return offset, 0
}

// lowWatermarkPoll spaces the looks at the followers' log starts while a
// DeleteRecords waits for them (they report it with every fetch).
const lowWatermarkPoll = 10 * time.Millisecond

// awaitLowWatermark waits until p's low watermark reaches offset, or ctx
// ends (REQUEST_TIMED_OUT) or p stops leading (NOT_LEADER_OR_FOLLOWER).
func (b *Broker) awaitLowWatermark(ctx context.Context, p *partition.Replica, offset int64) (int64, int16) {
	t := time.NewTicker(lowWatermarkPoll)
	defer t.Stop()
	for {
		lw, leading := p.LowWatermark()
		switch {
		case !leading:
			return -1, kerr.NotLeaderForPartition.Code
		case lw >= offset:
			return lw, 0
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return lw, kerr.RequestTimedOut.Code
		}
	}
}

// debuggingReplicaID is Kafka's ListOffsets replica id that a follower
// answers too (ListOffsetsRequest.DEBUGGING_REPLICA_ID): a tool checking
// every replica's log start offset.
const debuggingReplicaID = -2
