package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordDeleter is the storage side of DeleteRecords: a PartitionLog whose
// log start offset can be moved into a segment (broker/log's
// DeleteRecordsBefore). A log without it refuses DeleteRecords.
type recordDeleter interface {
	DeleteRecordsBefore(offset int64) (int64, error)
}

// errNoRecordDeletion: the partition's storage cannot move its log start.
var errNoRecordDeletion = errors.New("broker: this partition's storage does not delete records")

// handleDeleteRecords moves the log start offset of partitions this broker
// leads up to the requested offset (-1: the high watermark), as Kafka's
// DeleteRecords: reads, ListOffsets earliest and retention follow the new
// start, and followers take it from the LogStartOffset of their next fetch
// response (replica_fetcher.go). An offset past the high watermark, or
// negative other than -1, is OFFSET_OUT_OF_RANGE and changes nothing.
// low_watermark is the leader's new log start offset; unlike Kafka, the
// answer does not wait for the followers to have moved theirs.
func (b *Broker) handleDeleteRecords(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.SetVersion(req.Version)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			p := b.partitionOf(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = unservedCode(b.metadata(), rt.Topic, rp.Partition)
			} else {
				sp.LowWatermark, sp.ErrorCode = b.deleteRecords(p, rp.Offset)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

func (b *Broker) deleteRecords(p *partition, offset int64) (int64, int16) {
	hw := p.highWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code
	}
	d, ok := p.log.(recordDeleter)
	if !ok {
		return -1, storageErrorCode(errNoRecordDeletion)
	}
	start, err := d.DeleteRecordsBefore(offset)
	if err != nil {
		b.logger.Warn("deleting records", "topic", p.topic, "partition", p.index, "offset", offset, "err", err)
		return -1, storageErrorCode(fmt.Errorf("%s-%d: %w", p.topic, p.index, err))
	}
	b.logger.Info("records deleted", "topic", p.topic, "partition", p.index, "log_start_offset", start)
	return start, 0
}

// followLogStart moves a follower's log start up to its leader's (the
// LogStartOffset of a fetch response), as far as its own log goes: records
// the leader deleted are deleted on every replica.
func (b *Broker) followLogStart(p *partition, leaderStart int64) {
	if leaderStart <= p.log.StartOffset() {
		return
	}
	d, ok := p.log.(recordDeleter)
	if !ok {
		return
	}
	if _, err := d.DeleteRecordsBefore(min(leaderStart, p.log.EndOffset())); err != nil {
		b.res.logs.log(slog.LevelWarn, "replica-log-start", "following the leader's log start offset", "topic", p.topic, "partition", p.index, "err", err)
	}
}

// debuggingReplicaID is Kafka's ListOffsets replica id that a follower
// answers too (ListOffsetsRequest.DEBUGGING_REPLICA_ID): a tool checking
// every replica's log start offset.
const debuggingReplicaID = -2
