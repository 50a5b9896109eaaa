package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxPartitionsPerTopic bounds one request's work: each partition is a
// directory and open files, and one broker cannot serve more usefully.
const maxPartitionsPerTopic = 10_000

// handleCreateTopics creates topics on this broker. Replication factor must
// be 1 or -1 (one broker); an explicit replica assignment gives the
// partition count and must name this broker only. Topic configs are accepted
// and ignored: per-topic overrides are not supported yet.
func (b *Broker) handleCreateTopics(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.SetVersion(req.Version)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		n := rt.NumPartitions
		if len(rt.ReplicaAssignment) > 0 {
			n = int32(len(rt.ReplicaAssignment))
		}
		switch {
		case seen[rt.Topic] > 1:
			fail(kerr.InvalidRequest, "topic named more than once in the request")
		case validateTopicName(rt.Topic) != nil:
			fail(kerr.InvalidTopicException, validateTopicName(rt.Topic).Error())
		case len(rt.ReplicaAssignment) > 0 && (rt.NumPartitions != -1 || rt.ReplicationFactor != -1):
			fail(kerr.InvalidRequest, "replica assignment given with partitions or replication factor")
		case !b.assignmentIsLocal(rt.ReplicaAssignment):
			fail(kerr.InvalidReplicaAssignment, fmt.Sprintf("only broker %d exists", b.cfg.BrokerID))
		case rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 && len(rt.ReplicaAssignment) == 0:
			fail(kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d > 1 available broker", rt.ReplicationFactor))
		case n == 0 || n < -1:
			fail(kerr.InvalidPartitions, fmt.Sprintf("number of partitions %d must be positive", n))
		case n > maxPartitionsPerTopic:
			fail(kerr.InvalidPartitions, fmt.Sprintf("number of partitions %d is over this broker's limit of %d", n, maxPartitionsPerTopic))
		case req.ValidateOnly:
			if b.lookup(rt.Topic) != nil {
				fail(kerr.TopicAlreadyExists, "topic "+rt.Topic+" already exists")
			}
		default:
			if _, err := b.createTopic(rt.Topic, n, false); err != nil {
				switch {
				case errors.Is(err, ErrTopicExists):
					fail(kerr.TopicAlreadyExists, "topic "+rt.Topic+" already exists")
				default:
					fail(kerr.UnknownServerError, err.Error())
				}
			}
		}
		if st.ErrorCode == 0 {
			if n <= 0 {
				n = b.cfg.NumPartitions
			}
			st.NumPartitions, st.ReplicationFactor = n, 1
			if !req.ValidateOnly {
				if t := b.lookup(rt.Topic); t != nil {
					st.NumPartitions = int32(len(t.partitions))
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return kmsgReply{resp}, nil
}

func (b *Broker) assignmentIsLocal(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) bool {
	for _, a := range as {
		if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.BrokerID {
			return false
		}
	}
	return true
}
