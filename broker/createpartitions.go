package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
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
		if !b.authorizeTopic(r, acl.OpAlter, rt.Topic) {
			st.ErrorCode, st.ErrorMessage = errTopicAuth.Code, kmsg.StringPtr(errTopicAuth.Message)
		} else if err := b.createPartitions(ctx, r, rt, seen[rt.Topic] > 1, req.ValidateOnly); err != nil {
			st.ErrorCode, st.ErrorMessage = err.code.Code, kmsg.StringPtr(err.msg)
			resp.ThrottleMillis = max(resp.ThrottleMillis, err.throttleMillis)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

// kafkaError is a Kafka error code with its message (and, for a quota
// refusal, the time to wait).
type kafkaError struct {
	code           *kerr.Error
	msg            string
	throttleMillis int32
}

func (b *Broker) createPartitions(ctx context.Context, r *request, rt kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool) *kafkaError {
	if dup {
		return &kafkaError{code: kerr.InvalidRequest, msg: "Duplicate topic in request."}
	}
	if rt.Count > maxPartitionsPerTopic {
		return &kafkaError{code: kerr.InvalidPartitions, msg: fmt.Sprintf(
			"number of partitions %d is over this broker's limit of %d", rt.Count, maxPartitionsPerTopic)}
	}
	m, err := b.clusterMember()
	if err != nil {
		return &kafkaError{code: adminError(err), msg: err.Error()}
	}
	var assignment [][]int32
	for _, a := range rt.Assignment {
		assignment = append(assignment, a.Replicas)
	}
	if rt.Assignment != nil && assignment == nil {
		assignment = [][]int32{} // given, but empty: the count check reports it
	}
	// Checked first, then charged the partitions it adds (KIP-599).
	added, err := m.AddPartitions(ctx, rt.Topic, rt.Count, assignment, true)
	if err != nil {
		return &kafkaError{code: adminError(err), msg: err.Error()}
	}
	if validateOnly {
		return nil
	}
	if wait := b.takeMutationQuota(ctx, r, len(added)); wait > 0 {
		b.res.throttled.Inc()
		return &kafkaError{kerr.ThrottlingQuotaExceeded, fmt.Sprintf(
			"controller.mutation.rate exceeded: adding %d partitions; retry in %v", len(added), wait), int32(wait.Milliseconds())}
	}
	if _, err := m.AddPartitions(ctx, rt.Topic, rt.Count, assignment, false); err != nil {
		return &kafkaError{code: adminError(err), msg: err.Error()}
	}
	ready := b.topicReady(rt.Topic)
	err = b.awaitServed(ctx, func(snap cluster.Snapshot) bool {
		return len(snap.Topics[rt.Topic].Partitions) >= int(rt.Count) && ready(snap)
	})
	if err != nil {
		return &kafkaError{code: adminError(err), msg: fmt.Sprintf("partitions of %s added; waiting for their leaders: %v", rt.Topic, err)}
	}
	return nil
}
