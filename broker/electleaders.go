package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
)

// handleElectLeaders runs a preferred (v0, or election_type 0) or unclean
// (1) leader election through the controller (cluster.Member.ElectLeaders)
// for the listed partitions, or all of them when topics is null, and
// answers once this broker's metadata shows the elected leaders or the
// request's timeout passes. Per partition the codes are Kafka's:
// ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION; with null
// topics the partitions that needed no election are left out, as Kafka
// does. A broker that is not the controller answers NOT_CONTROLLER (top
// level from v1, and per partition).
func (b *Broker) handleElectLeaders(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	typ := cluster.ElectPreferred
	if req.Version >= 1 {
		typ = cluster.ElectionType(req.ElectionType)
	}
	if !b.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode = errClusterAuth.Code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, errClusterAuth.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return kmsgReply{resp}, nil
	}
	var parts []cluster.PartitionRef
	if req.Topics != nil {
		parts = []cluster.PartitionRef{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, cluster.PartitionRef{Topic: rt.Topic, Partition: p})
			}
		}
	}
	results, err := b.electLeaders(ctx, typ, parts)
	if err != nil {
		code := adminError(err)
		if typ != cluster.ElectPreferred && typ != cluster.ElectUnclean {
			code = kerr.InvalidRequest
		}
		resp.ErrorCode = code.Code
		for _, p := range parts {
			results = append(results, cluster.ElectionResult{PartitionRef: p, Err: err})
		}
	}
	index := map[string]int{}
	for _, res := range results {
		if req.Topics == nil && errors.Is(res.Err, cluster.ErrElectionNotNeeded) {
			continue
		}
		i, ok := index[res.Topic]
		if !ok {
			i = len(resp.Topics)
			index[res.Topic] = i
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = res.Topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewElectLeadersResponseTopicPartition()
		sp.Partition = res.Partition
		if res.Err != nil {
			sp.ErrorCode, sp.ErrorMessage = adminError(res.Err).Code, kmsg.StringPtr(res.Err.Error())
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	return kmsgReply{resp}, nil
}

// electLeaders asks the controller and waits until the elected leaders are
// in this broker's served metadata.
func (b *Broker) electLeaders(ctx context.Context, typ cluster.ElectionType, parts []cluster.PartitionRef) ([]cluster.ElectionResult, error) {
	m, err := b.clusterMember()
	if err != nil {
		return nil, err
	}
	results, err := m.ElectLeaders(ctx, typ, parts)
	if err != nil {
		return nil, err
	}
	werr := b.awaitServed(ctx, func(snap cluster.Snapshot) bool {
		for _, res := range results {
			if res.Err != nil {
				continue
			}
			if p, ok := snap.Partition(res.Topic, res.Partition); ok && p.Leader != res.Leader {
				return false
			}
		}
		return true
	})
	if werr != nil {
		for i := range results {
			if results[i].Err == nil {
				results[i].Err = fmt.Errorf("%w: elected broker %d; waiting for the metadata to show it: %w",
					context.DeadlineExceeded, results[i].Leader, werr)
			}
		}
	}
	return results, nil
}
