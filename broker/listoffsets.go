package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special ListOffsets timestamps (frozen by the protocol).
const (
	listLatest   = -1
	listEarliest = -2
)

// handleListOffsets answers earliest (-2), latest (-1) and by-timestamp
// lookups: the first offset whose batch holds a timestamp >= t, or -1 when
// no record is that recent.
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
				sp.Offset = p.log.EndOffset()
			case rp.Timestamp == listEarliest:
				sp.Offset = p.log.StartOffset()
			case rp.Timestamp < 0:
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				if off, ts, ok := p.log.OffsetForTimestamp(rp.Timestamp); ok {
					sp.Offset, sp.Timestamp = off, ts
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}
