package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/cluster"
)

// handleAlterPartitionReassignments starts, changes or cancels (null
// replicas) partition reassignments through the cluster
// (cluster.Member.AlterReassignments, Kafka's KIP-455 layout in the topic
// nodes); the controller completes each once its target replicas are in
// sync. Per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
// (empty, repeated or not-live brokers), NO_REASSIGNMENT_IN_PROGRESS (a
// cancellation with nothing to cancel). The answer does not wait for the
// data to move; ListPartitionReassignments follows it.
func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	m, err := b.clusterMember()
	if !b.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode, resp.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
		return kmsgReply{resp}, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		reqs := make([]cluster.ReassignmentRequest, 0, len(rt.Partitions))
		for _, rp := range rt.Partitions {
			reqs = append(reqs, cluster.ReassignmentRequest{Partition: rp.Partition, Target: rp.Replicas})
		}
		var results map[int32]error
		topicErr := err
		if topicErr == nil {
			results, topicErr = m.AlterReassignments(ctx, rt.Topic, reqs)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			perr := topicErr
			if perr == nil {
				perr = results[rp.Partition]
			}
			if perr != nil {
				sp.ErrorCode, sp.ErrorMessage = adminErrorCode(perr), kmsg.StringPtr(perr.Error())
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

// handleListPartitionReassignments lists the reassignments in progress
// (of the given partitions, or all with null topics) from the metadata:
// the full replica list with the adding and removing replicas.
func (b *Broker) handleListPartitionReassignments(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.SetVersion(req.Version)
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
		return kmsgReply{resp}, nil
	}
	snap := b.metadata()
	wanted := func(topic string, p int32) bool { return true }
	if req.Topics != nil {
		wanted = func(topic string, p int32) bool {
			return slices.ContainsFunc(req.Topics, func(rt kmsg.ListPartitionReassignmentsRequestTopic) bool {
				return rt.Topic == topic && slices.Contains(rt.Partitions, p)
			})
		}
	}
	for _, name := range snap.TopicNames() {
		var st *kmsg.ListPartitionReassignmentsResponseTopic
		for _, p := range snap.Topics[name].Partitions {
			if !p.Reassigning() || !wanted(name, p.ID) {
				continue
			}
			if st == nil {
				t := kmsg.NewListPartitionReassignmentsResponseTopic()
				t.Topic = name
				resp.Topics = append(resp.Topics, t)
				st = &resp.Topics[len(resp.Topics)-1]
			}
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition, sp.Replicas = p.ID, p.Replicas
			sp.AddingReplicas, sp.RemovingReplicas = p.AddingReplicas, p.RemovingReplicas
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return kmsgReply{resp}, nil
}
