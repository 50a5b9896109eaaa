package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleOffsetForLeaderEpoch answers, for each partition this broker leads,
// where the requested leader epoch ends in its log (Kafka's
// OffsetsForLeaderEpoch, KIP-101/KIP-279): the log end offset for the
// current epoch, else the start offset of the first later epoch, with the
// largest epoch not above the requested one; -1 and -1 when the log has no
// epoch that old. Followers use it to truncate a divergent tail; consumers
// (KIP-320) to detect one.
func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.SetVersion(req.Version)
	// ClusterAction (followers), or else Describe on each topic.
	replica := b.authorizeQuiet(r, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		describable := replica || b.authorizeTopic(r, acl.OpDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := b.partitions.Leader(rt.Topic, rp.Partition)
			switch {
			case !describable:
				sp.ErrorCode = errTopicAuth.Code
			case p == nil || !p.Leading():
				sp.ErrorCode = unservedCode(b.metadata(), rt.Topic, rp.Partition)
				if sp.ErrorCode == 0 {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			default:
				if code := fetchEpochCode(p, rp.CurrentLeaderEpoch); code != 0 {
					sp.ErrorCode = code
					break
				}
				// Not capped at the high watermark for consumers, as in
				// Kafka: a new leader's high watermark lags until its
				// followers fetch, and a consumer that read up to the old
				// leader's would take the gap for lost records.
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}
