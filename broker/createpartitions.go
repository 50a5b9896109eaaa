package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
)

// handleCreatePartitions grows topics through the cluster
// (cluster.Member.AddPartitions): the new partitions are assigned as a new
// topic's are, or as the request's assignment says, and each topic is
// answered once its new partitions have leaders and this broker serves the
// ones it leads, or when the request's timeout passes (REQUEST_TIMED_OUT;
// the partitions still come). Errors are Kafka's: a count not above the
// current one INVALID_PARTITIONS, a bad assignment
// INVALID_REPLICA_ASSIGNMENT, an unknown topic UNKNOWN_TOPIC_OR_PARTITION,
// a topic named twice INVALID_REQUEST. validate_only checks and writes
// nothing.
func (b *Broker) handleCreatePartitions(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	resp.SetVersion(req.Version)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if err := b.createPartitions(ctx, rt, seen[rt.Topic] > 1, req.ValidateOnly); err != nil {
			st.ErrorCode, st.ErrorMessage = err.code.Code, kmsg.StringPtr(err.msg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

// kafkaError is a Kafka error code with its message.
type kafkaError struct {
	code *kerr.Error
	msg  string
}

func (b *Broker) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool) *kafkaError {
	if dup {
		return &kafkaError{kerr.InvalidRequest, "Duplicate topic in request."}
	}
	if rt.Count > maxPartitionsPerTopic {
		return &kafkaError{kerr.InvalidPartitions, fmt.Sprintf(
			"number of partitions %d is over this broker's limit of %d", rt.Count, maxPartitionsPerTopic)}
	}
	m, err := b.clusterMember()
	if err != nil {
		return &kafkaError{adminError(err), err.Error()}
	}
	var assignment [][]int32
	for _, a := range rt.Assignment {
		assignment = append(assignment, a.Replicas)
	}
	if rt.Assignment != nil && assignment == nil {
		assignment = [][]int32{} // given, but empty: the count check reports it
	}
	if _, err := m.AddPartitions(ctx, rt.Topic, rt.Count, assignment, validateOnly); err != nil {
		return &kafkaError{adminError(err), err.Error()}
	}
	if validateOnly {
		return nil
	}
	ready := b.topicReady(rt.Topic)
	err = b.awaitServed(ctx, func(snap cluster.Snapshot) bool {
		return len(snap.Topics[rt.Topic].Partitions) >= int(rt.Count) && ready(snap)
	})
	if err != nil {
		return &kafkaError{adminError(err), fmt.Sprintf("partitions of %s added; waiting for their leaders: %v", rt.Topic, err)}
	}
	return nil
}
