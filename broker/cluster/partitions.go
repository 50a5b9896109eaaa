package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/internal/coord"
)

// AddPartitions grows topic to count partitions, as Kafka's
// AdminZkClient.addPartitions does: it rewrites the topic node with the new
// partitions' replica lists (compare-and-set, redone on top of a concurrent
// change), keeping the existing ones, the topic id and any reassignment
// fields as they are; the controller then elects the new partitions'
// leaders (the call does not wait for them). Any member may call it.
//
// With assignment nil the new partitions are assigned as a new topic's
// would be, over the live brokers (rack-aware when every one has a rack),
// with the replication factor of partition 0: the assignment of count
// partitions is computed and the new ones' lists taken from its tail, so
// that leadership continues round the broker list. Else assignment holds
// one list per new partition, first replica preferred; it must name live
// brokers, each once, with the topic's replication factor. With
// validateOnly nothing is written.
//
// It returns the new partitions' replica lists. Errors wrap
// ErrUnknownTopic, ErrInvalidTopic (marked for deletion),
// ErrInvalidPartitions (count not above the current one),
// ErrInvalidReplicaAssignment, ErrReassignmentInProgress or
// ErrInvalidReplicationFactor (too few live brokers).
func (m *Member) AddPartitions(ctx context.Context, topic string, count int32, assignment [][]int32, validateOnly bool) ([][]int32, error) {
	s, err := m.currentSession()
	if err != nil {
		return nil, err
	}
	for {
		data, st, rec, err := readLiveTopic(ctx, s, topic, "add partitions to", ErrInvalidTopic)
		if err != nil {
			return nil, err
		}
		existing, _, err := decodeAssignment(topic, data)
		if err != nil {
			return nil, err
		}
		if len(rec.AddingReplicas) > 0 || len(rec.RemovingReplicas) > 0 {
			return nil, fmt.Errorf("%w: topic %s", ErrReassignmentInProgress, topic)
		}
		have := int32(len(existing))
		switch {
		case count == have:
			return nil, fmt.Errorf("%w: topic already has %d partitions", ErrInvalidPartitions, have)
		case count < have:
			return nil, fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d",
				ErrInvalidPartitions, have, count)
		}
		names, _, err := s.Children(ctx, brokerIDsPath)
		if err != nil {
			return nil, fmt.Errorf("cluster: add partitions to %s: listing brokers: %w", topic, err)
		}
		live := brokerIDs(names)
		rf := int16(len(existing[0]))
		added := assignment
		if added == nil {
			all, err := assignLive(ctx, s, live, count, rf)
			if err != nil {
				return nil, fmt.Errorf("cluster: add partitions to %s: %w", topic, err)
			}
			added = all[have:]
		} else if err := checkNewAssignment(have, count, rf, live, assignment); err != nil {
			return nil, err
		}
		if validateOnly {
			return added, nil
		}
		for i, rs := range added {
			rec.Partitions[strconv.Itoa(int(have)+i)] = slices.Clone(rs)
		}
		_, err = s.Set(ctx, topicPath(topic), encodeTopic(rec), st.Version)
		switch {
		case err == nil:
			m.log.Info("cluster: partitions added", "topic", topic, "from", have, "to", count, "assignment", added)
			return added, nil
		case errors.Is(err, coord.ErrBadVersion):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// the node changed meanwhile: check and assign again on top
		case errors.Is(err, coord.ErrNoNode):
			return nil, fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
		default:
			return nil, fmt.Errorf("cluster: add partitions to %s: %w", topic, err)
		}
	}
}

// checkNewAssignment is Kafka's validateReplicaAssignment for the lists of
// partitions have..count-1: one per new partition, no empty or repeated
// replica, only live brokers, replication factor rf.
func checkNewAssignment(have, count int32, rf int16, live []int32, as [][]int32) error {
	if int32(len(as)) != count-have {
		return fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided",
			ErrInvalidReplicaAssignment, count-have, len(as))
	}
	var unknown []string
	for i, rs := range as {
		p := have + int32(i)
		if len(rs) == 0 {
			return fmt.Errorf("%w: cannot have replication factor of 0 for partition id %d", ErrInvalidReplicaAssignment, p)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(rs)))) != len(rs) {
			return fmt.Errorf("%w: duplicate brokers not allowed in replica assignment: %s for partition id %d",
				ErrInvalidReplicaAssignment, joinIDs(rs), p)
		}
		if len(rs) != int(rf) {
			return fmt.Errorf("%w: inconsistent replication factor between partitions, partition 0 has %d while partition %d has %d",
				ErrInvalidReplicaAssignment, rf, p, len(rs))
		}
		for _, id := range rs {
			if _, ok := slices.BinarySearch(live, id); !ok && !slices.Contains(unknown, strconv.Itoa(int(id))) {
				unknown = append(unknown, strconv.Itoa(int(id)))
			}
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: unknown broker(s) in replica assignment: %s", ErrInvalidReplicaAssignment, strings.Join(unknown, ", "))
	}
	return nil
}

func joinIDs(ids []int32) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.Itoa(int(id))
	}
	return strings.Join(out, ", ")
}

// readLiveTopic reads a topic node for a compare-and-set update (what
// names the operation in errors): ErrUnknownTopic when there is none, an
// error wrapping deleting when the topic is marked for deletion.
func readLiveTopic(ctx context.Context, s coord.Session, topic, what string, deleting error) ([]byte, coord.Stat, topicRecord, error) {
	data, st, err := s.Get(ctx, topicPath(topic))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, st, topicRecord{}, fmt.Errorf("%w: topic '%s' does not exist", ErrUnknownTopic, topic)
	}
	if err != nil {
		return nil, st, topicRecord{}, fmt.Errorf("cluster: %s %s: %w", what, topic, err)
	}
	if marked, _, err := s.Exists(ctx, deleteTopicPath(topic)); err != nil {
		return nil, st, topicRecord{}, fmt.Errorf("cluster: %s %s: %w", what, topic, err)
	} else if marked {
		return nil, st, topicRecord{}, fmt.Errorf("%w: the topic %s is queued for deletion", deleting, topic)
	}
	rec, err := decodeTopic(topic, data)
	return data, st, rec, err
}
