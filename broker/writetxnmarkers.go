package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partition"
)

// markerTimeout bounds how long WriteTxnMarkers waits for the in-sync
// replicas to have a marker: Kafka's request.timeout.ms default, which its
// coordinator uses for the same wait.
const markerTimeout = 30 * time.Second

// markerSlot is a marker appended to p, answered at resp.Markers[m].
// Topics[t].Partitions[i] once committed.
type markerSlot struct {
	m, t, i  int
	p        *partition.Replica
	end      int64
	pid      int64
	epoch    int16
	commit   bool
	offsets  bool // a __consumer_offsets partition: tell the listener
	position int32
}

// handleWriteTxnMarkers (API 27) is how a transaction coordinator ends a
// transaction on the partitions it touched: for each partition this broker
// leads, a COMMIT or ABORT control batch is appended for the producer
// (ending its ongoing transaction, moving the last stable offset, and on
// ABORT adding it to the aborted-transaction index), and answered once
// every in-sync replica has it, as acks=all. A stale producer epoch gets
// INVALID_PRODUCER_EPOCH, a stale coordinator epoch
// TRANSACTION_COORDINATOR_FENCED, a partition not led here
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION. It is an
// inter-broker request: ClusterAction on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED everywhere. Markers committed on a
// __consumer_offsets partition are passed to the TxnMarkerListener.
func (b *Broker) handleWriteTxnMarkers(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.SetVersion(req.Version)
	allowed := b.authorizeCluster(r, acl.OpClusterAction)
	var snap *cluster.Snapshot
	var slots []markerSlot
	targets := map[*partition.Replica]int64{}
	for mi, rm := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		for ti, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for pi, part := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = part
				p := b.partitions.Leader(rt.Topic, part)
				switch {
				case !allowed:
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case p == nil:
					if snap == nil {
						s := b.metadata()
						snap = &s
					}
					sp.ErrorCode = unservedCode(*snap, rt.Topic, part)
				case !p.Leading():
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				case p.TxnLog() == nil:
					sp.ErrorCode = kerr.UnsupportedForMessageFormat.Code
				case p.ISRSize() < int(p.Config().MinInsyncReplicas):
					sp.ErrorCode = kerr.NotEnoughReplicas.Code
				default:
					b.txnGuards.markerWritten(rt.Topic, part, rm.ProducerID)
					res, err := p.TxnLog().AppendMarker(rm.ProducerID, rm.ProducerEpoch, rm.CoordinatorEpoch, rm.Committed, p.LeaderEpoch())
					if err != nil {
						sp.ErrorCode = partition.ErrorCode(err)
						b.res.logs.log(slog.LevelWarn, "txn-marker-rejected", "transaction marker rejected", "topic", p.Topic(),
							"partition", p.Partition(), "producer_id", rm.ProducerID, "err", err)
						break
					}
					b.metrics.observeOffsets(p)
					p.Wake()
					end := res.LastOffset + 1
					targets[p] = max(targets[p], end)
					slots = append(slots, markerSlot{m: mi, t: ti, i: pi, p: p, end: end, pid: rm.ProducerID,
						epoch: rm.ProducerEpoch, commit: rm.Committed, offsets: rt.Topic == group.OffsetsTopic, position: part})
				}
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	if len(slots) > 0 {
		b.partitions.WaitCommitted(ctx, time.Now().Add(markerTimeout), targets)
	}
	for _, s := range slots {
		sp := &resp.Markers[s.m].Topics[s.t].Partitions[s.i]
		switch {
		case s.p.HighWatermark() >= s.end:
			if s.offsets {
				b.txnMarkerListener().TxnMarker(s.position, s.pid, s.epoch, s.commit)
			}
		case !s.p.Leading():
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		default:
			sp.ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	return kmsgReply{resp}, nil
}
