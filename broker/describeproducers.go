package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
)

// handleDescribeProducers (API 61, KIP-664) lists, for each partition this
// broker leads, the producers its log remembers: id, epoch, last sequence
// and timestamp, the coordinator epoch of the last marker and the first
// offset of the ongoing transaction (-1: none), which is how
// kafka-transactions --find-hanging spots transactions no coordinator
// knows. Read on the topic, else TOPIC_AUTHORIZATION_FAILED; a partition
// not led here gets NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) handleDescribeProducers(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	resp.SetVersion(req.Version)
	var snap *cluster.Snapshot
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		readable := b.authorizeTopic(r, acl.OpRead, rt.Topic)
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			p := b.partitions.Leader(rt.Topic, part)
			switch {
			case !readable:
				sp.ErrorCode = errTopicAuth.Code
			case p == nil:
				if snap == nil {
					s := b.metadata()
					snap = &s
				}
				sp.ErrorCode = unservedCode(*snap, rt.Topic, part)
			case !p.Leading():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p.TxnLog() != nil:
				for _, pi := range p.TxnLog().Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = pi.ProducerID, int32(pi.ProducerEpoch)
					ap.LastSequence, ap.LastTimestamp = pi.LastSequence, pi.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.CoordinatorEpoch, pi.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}
