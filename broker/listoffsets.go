package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special ListOffsets timestamps (frozen by the protocol).
const (
	listLatest   = -1
	listEarliest = -2
)

// handleListOffsets answers earliest (-2), latest (-1) and by-timestamp
// lookups: the offset and timestamp of the first record, in offset order,
// of the first batch whose max timestamp is >= t that has a timestamp >= t
// (Kafka's answer), or -1 when no record is that recent.
func (b *Broker) handleListOffsets(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.SetVersion(req.Version)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			p := b.partitionOf(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = unservedCode(b.metadata(), rt.Topic, rp.Partition)
			case rp.Timestamp == listLatest:
				// What a consumer can read up to: the high watermark.
				sp.Offset = p.highWatermark()
			case rp.Timestamp == listEarliest:
				sp.Offset = p.log.StartOffset()
			case rp.Timestamp < 0:
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				sp.Offset, sp.Timestamp = b.offsetForTimestamp(p, rp.Timestamp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

// offsetForTimestamp finds, in the batch the log picks by its time index,
// the first record at or after ts. If the batch cannot be read or decoded
// the batch's base offset and max timestamp are answered, which is where a
// consumer should start anyway. (-1, -1) means no record is that recent.
func (b *Broker) offsetForTimestamp(p *partition, ts int64) (offset, timestamp int64) {
	off, maxTS, ok := p.log.OffsetForTimestamp(ts)
	if !ok {
		return -1, -1
	}
	v, err := p.log.Read(off, 1)
	if err != nil {
		b.logger.Warn("reading the batch for a timestamp lookup", "topic", p.topic, "partition", p.index, "offset", off, "err", err)
		return off, maxTS
	}
	defer v.Release()
	data, err := v.Bytes()
	if err == nil {
		var found bool
		var recOff, recTS int64
		if recOff, recTS, found, err = recordAtOrAfter(data, ts, b.decompressor); err == nil && found {
			return recOff, recTS
		}
		if err == nil {
			err = fmt.Errorf("no record of the batch at %d has a timestamp >= %d though its max timestamp is %d", off, ts, maxTS)
		}
	}
	b.logger.Warn("timestamp lookup within a batch", "topic", p.topic, "partition", p.index, "offset", off, "err", err)
	return off, maxTS
}
