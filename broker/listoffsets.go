package broker

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// Special ListOffsets timestamps (frozen by the protocol).
const (
	listLatest   = -1
	listEarliest = -2
)

// handleListOffsets answers, from v1, earliest (-2), latest (-1) and by-timestamp
// lookups: the offset and timestamp of the first record, in offset order,
// of the first batch whose max timestamp is >= t that has a timestamp >= t
// (Kafka's answer), or -1 when no record is that recent. v0 answers a list
// of offsets instead (offsetsBefore).
func (b *Broker) handleListOffsets(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.SetVersion(req.Version)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		describable := b.authorizeTopic(r, acl.OpDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			if p == nil && req.ReplicaID == debuggingReplicaID {
				p = b.partitions.Replica(rt.Topic, rp.Partition)
			}
			switch {
			case !describable:
				sp.ErrorCode = errTopicAuth.Code
			case p == nil:
				sp.ErrorCode = unservedCode(b.metadata(), rt.Topic, rp.Partition)
			case req.Version == 0:
				sp.OldStyleOffsets, sp.ErrorCode = b.offsetsBefore(p, rp.Timestamp, rp.MaxNumOffsets, req.ReplicaID == -1)
			case rp.Timestamp == listLatest && req.IsolationLevel == 1:
				// read_committed reads up to the last stable offset.
				sp.Offset = p.LastStable(p.HighWatermark())
			case rp.Timestamp == listLatest:
				// What a consumer can read up to: the high watermark.
				sp.Offset = p.HighWatermark()
			case rp.Timestamp == listEarliest:
				sp.Offset = p.Log().StartOffset()
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
func (b *Broker) offsetForTimestamp(p *partition.Replica, ts int64) (offset, timestamp int64) {
	off, maxTS, ok := p.Log().OffsetForTimestamp(ts)
	if !ok {
		return -1, -1
	}
	v, err := p.Log().Read(off, 1)
	if err != nil {
		b.logger.Warn("reading the batch for a timestamp lookup", "topic", p.Topic(), "partition", p.Partition(), "offset", off, "err", err)
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
	b.logger.Warn("timestamp lookup within a batch", "topic", p.Topic(), "partition", p.Partition(), "offset", off, "err", err)
	return off, maxTS
}

// offsetsBefore is ListOffsets v0, Kafka's legacy fetchOffsetsBefore (as
// Kafka 2.8 still serves it, for clients such as Burrow 1.2 that build a
// v0 request whatever broker version they are told): the candidates are
// each segment's base offset (at least the log start offset) with the
// modification time of its file, then, if the last segment holds data, the
// log end offset with the time now. Latest (-1) picks the last candidate,
// earliest (-2) the first, a time the last one modified at or before it
// (a time before every segment, or another negative value, finds none);
// the answer is up to maxNum offsets from the pick backwards, in
// descending order. For a consumer (replica id -1) offsets above the high
// watermark are replaced by it. A negative maxNum fails, as in Kafka, with
// UNKNOWN_SERVER_ERROR.
func (b *Broker) offsetsBefore(p *partition.Replica, ts int64, maxNum int32, consumer bool) ([]int64, int16) {
	if maxNum < 0 {
		return nil, kerr.UnknownServerError.Code
	}
	type candidate struct {
		offset   int64
		modified int64 // ms
	}
	start, end := p.Log().StartOffset(), p.Log().EndOffset()
	var cands []candidate
	lastHasData := end > start
	if sl, ok := p.Log().(interface {
		Segments() ([]partlog.SegmentInfo, error)
	}); ok {
		segs, err := sl.Segments()
		if err != nil {
			b.logger.Warn("listing segments for ListOffsets v0", "topic", p.Topic(), "partition", p.Partition(), "err", err)
			return nil, partition.ErrorCode(err)
		}
		for _, s := range segs {
			cands = append(cands, candidate{max(s.BaseOffset, start), s.LastModified.UnixMilli()})
		}
		lastHasData = len(segs) > 0 && segs[len(segs)-1].Size > 0
	} else {
		// A storage without segments is one segment as old as time.
		cands = append(cands, candidate{start, 0})
	}
	if lastHasData || len(cands) == 0 {
		cands = append(cands, candidate{end, time.Now().UnixMilli()})
	}
	pick := -1
	switch ts {
	case listLatest:
		pick = len(cands) - 1
	case listEarliest:
		pick = 0
	default:
		pick = len(cands) - 1
		for pick >= 0 && cands[pick].modified > ts {
			pick--
		}
	}
	n := min(int(maxNum), pick+1)
	out := make([]int64, 0, n)
	for i := pick; i > pick-n; i-- {
		out = append(out, cands[i].offset)
	}
	// Already descending unless a roll after end was read listed a segment
	// beyond it; descending order is the contract (Kafka sorts too).
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	// The high watermark is what v1+ answers for latest.
	if hw := min(p.HighWatermark(), end); consumer && len(out) > 0 && out[0] > hw {
		i := 0
		for i < len(out) && out[i] > hw {
			i++
		}
		out = append([]int64{hw}, out[i:]...)
	}
	return out, 0
}
