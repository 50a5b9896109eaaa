package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/tributary/tributary/internal/coord"
)

// ReassignmentRequest is one partition's requested replica set (Kafka's
// AlterPartitionReassignments); a nil Target cancels the partition's
// reassignment in progress.
type ReassignmentRequest struct {
	Partition int32
	Target    []int32
}

// AlterReassignments starts, changes or cancels partition reassignments
// of topic, as Kafka 2.4+ (KIP-455) records them in the topic node: the
// partition's replicas become the target followed by the original
// replicas not in it, with adding_replicas (target minus original) and
// removing_replicas (original minus target). The new replicas open the
// partition and follow its leader; once every target replica is in the
// ISR the controller completes the move (completeReassignments): the
// leadership leaves a removed leader, the removed replicas leave the ISR
// and the replica list becomes the target, in one fenced multi-op. A
// cancellation puts the original replicas back. Any member may call it; the
// topic node is written by compare-and-set, redone on top of a concurrent
// change.
//
// It returns one error per request (nil: accepted): wrapping
// ErrUnknownTopic for a partition the topic does not have,
// ErrInvalidReplicaAssignment for an empty target, a repeated broker or one
// that is not live, ErrNoReassignmentInProgress for a cancellation with
// nothing to cancel. The error returned alone is the topic's (unknown,
// marked for deletion) or the coordination service's. It returns once this
// member's Metadata shows the write (bounded by ctx).
func (m *Member) AlterReassignments(ctx context.Context, topic string, reqs []ReassignmentRequest) (map[int32]error, error) {
	s, err := m.currentSession()
	if err != nil {
		return nil, err
	}
	for {
		_, st, rec, err := readLiveTopic(ctx, s, topic, "reassign", ErrUnknownTopic)
		if err != nil {
			return nil, err
		}
		names, _, err := s.Children(ctx, brokerIDsPath)
		if err != nil {
			return nil, fmt.Errorf("cluster: reassign %s: listing brokers: %w", topic, err)
		}
		live := brokerIDs(names)
		results := map[int32]error{}
		changed := false
		for _, r := range reqs {
			err := reassign(&rec, r, live)
			results[r.Partition] = err
			changed = changed || err == nil
		}
		if !changed {
			return results, nil
		}
		written, err := s.Set(ctx, topicPath(topic), encodeTopic(rec), st.Version)
		switch {
		case err == nil:
			m.log.Info("cluster: partition reassignments written", "topic", topic, "requests", len(reqs))
			// Answered once this member's metadata shows the write, so
			// that a ListPartitionReassignments (answered from it) or a
			// second cancellation right after sees what was written.
			if _, werr := m.AwaitMetadata(ctx, func(snap Snapshot) bool {
				t, ok := snap.Topics[topic]
				return !ok || t.version >= written.Version
			}); werr != nil {
				m.log.Warn("cluster: reassignments written; the metadata does not show them yet", "topic", topic, "err", werr)
			}
			return results, nil
		case errors.Is(err, coord.ErrBadVersion):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		default:
			return nil, fmt.Errorf("cluster: reassign %s: %w", topic, err)
		}
	}
}

// reassign applies one request to the topic record.
func reassign(rec *topicRecord, r ReassignmentRequest, live []int32) error {
	key := strconv.Itoa(int(r.Partition))
	cur, ok := rec.Partitions[key]
	if !ok {
		return fmt.Errorf("%w: partition %d", ErrUnknownTopic, r.Partition)
	}
	adding, removing := rec.AddingReplicas[key], rec.RemovingReplicas[key]
	origin := filter(cur, func(id int32) bool { return !slices.Contains(adding, id) })
	if r.Target == nil {
		if len(adding) == 0 && len(removing) == 0 {
			return fmt.Errorf("%w: partition %d", ErrNoReassignmentInProgress, r.Partition)
		}
		setReassignment(rec, key, origin, nil, nil)
		return nil
	}
	if len(r.Target) == 0 {
		return fmt.Errorf("%w: partition %d: the target replica set is empty", ErrInvalidReplicaAssignment, r.Partition)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(r.Target)))) != len(r.Target) {
		return fmt.Errorf("%w: partition %d: duplicate brokers in %v", ErrInvalidReplicaAssignment, r.Partition, r.Target)
	}
	for _, id := range r.Target {
		if _, ok := slices.BinarySearch(live, id); !ok {
			return fmt.Errorf("%w: partition %d: broker %d is not live", ErrInvalidReplicaAssignment, r.Partition, id)
		}
	}
	add := filter(r.Target, func(id int32) bool { return !slices.Contains(origin, id) })
	remove := filter(origin, func(id int32) bool { return !slices.Contains(r.Target, id) })
	if len(add) == 0 && len(remove) == 0 {
		setReassignment(rec, key, slices.Clone(r.Target), nil, nil) // a reorder: nothing to copy
		return nil
	}
	full := append(slices.Clone(r.Target), remove...)
	setReassignment(rec, key, full, add, remove)
	return nil
}

func setReassignment(rec *topicRecord, key string, replicas, adding, removing []int32) {
	rec.Partitions[key] = replicas
	if rec.AddingReplicas == nil {
		rec.AddingReplicas = map[string][]int32{}
	}
	if rec.RemovingReplicas == nil {
		rec.RemovingReplicas = map[string][]int32{}
	}
	delete(rec.AddingReplicas, key)
	delete(rec.RemovingReplicas, key)
	if len(adding) > 0 {
		rec.AddingReplicas[key] = adding
	}
	if len(removing) > 0 {
		rec.RemovingReplicas[key] = removing
	}
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// consistentReassignment: the adding and removing replicas are replicas,
// as KIP-455 writes them. A node written otherwise (by hand, by an older
// tool) is left as it is: the controller cannot tell what it means.
func (p Partition) consistentReassignment() bool {
	in := func(id int32) bool { return slices.Contains(p.Replicas, id) }
	return !slices.ContainsFunc(p.AddingReplicas, func(id int32) bool { return !in(id) }) &&
		!slices.ContainsFunc(p.RemovingReplicas, func(id int32) bool { return !in(id) })
}

// reassignmentTarget is the replica set a reassignment in progress moves to.
func (p Partition) reassignmentTarget() []int32 {
	return filter(p.Replicas, func(id int32) bool { return !slices.Contains(p.RemovingReplicas, id) })
}

// completeReassignments finishes the reassignments of t whose target
// replicas are all in the ISR, in one fenced multi-op: each partition's
// state gets a leader from the target (the current one if it stays and
// is eligible, else the first target replica eligible and in the ISR) and
// the ISR minus the removed replicas, with the leader epoch bumped; the
// topic node gets the target as the replica list, without the
// reassignment entries. A partition whose state the cache has not shown
// since our last write waits for the next pass; an inconsistent record is
// never completed.
func (c *controller) completeReassignments(ctx context.Context, t Topic, brokers brokerStates) error {
	type completion struct {
		path   string
		rec    stateRecord
		from   int32 // the state node's version
		target []int32
	}
	done := map[string]completion{}
	for _, p := range t.Partitions {
		if !p.Reassigning() || p.stateVersion < 0 || !p.consistentReassignment() {
			continue
		}
		path := statePath(t.Name, p.ID)
		if want, ok := c.expected[path]; ok && p.stateVersion < want {
			continue
		}
		target := p.reassignmentTarget()
		if slices.ContainsFunc(target, func(id int32) bool { return !slices.Contains(p.ISR, id) }) {
			continue // the new replicas are still catching up
		}
		leader := int32(-1)
		if slices.Contains(target, p.Leader) && brokers.eligible(p.Leader) {
			leader = p.Leader
		} else {
			for _, id := range target {
				if brokers.eligible(id) {
					leader = id
					break
				}
			}
		}
		if leader < 0 {
			continue // no target replica can lead yet
		}
		isr := filter(p.ISR, func(id int32) bool { return slices.Contains(target, id) })
		rec := stateRecord{ControllerEpoch: c.epoch, Leader: leader, LeaderEpoch: p.LeaderEpoch + 1, ISR: isr}
		done[strconv.Itoa(int(p.ID))] = completion{path, rec, p.stateVersion, target}
	}
	if len(done) == 0 {
		return nil
	}
	data, st, err := c.s.Get(ctx, topicPath(t.Name))
	if err != nil {
		return c.failed(ctx, "reading "+topicPath(t.Name), err)
	}
	rec, err := decodeTopic(t.Name, data)
	if err != nil {
		return err
	}
	ops := []coord.Op{c.fence()}
	produced := map[string]int32{}
	for key, d := range done {
		if len(rec.AddingReplicas[key]) == 0 && len(rec.RemovingReplicas[key]) == 0 {
			continue // completed already; the cache showed the state first
		}
		setReassignment(&rec, key, d.target, nil, nil)
		ops = append(ops, coord.Op{Kind: coord.OpSet, Path: d.path, Data: encodeState(d.rec), Version: d.from})
		produced[d.path] = d.from + 1
	}
	if len(produced) == 0 {
		return nil
	}
	ops = append(ops, coord.Op{Kind: coord.OpSet, Path: topicPath(t.Name), Data: encodeTopic(rec), Version: st.Version})
	if err := c.s.Multi(ctx, ops...); err != nil {
		return c.failed(ctx, "completing the reassignments of "+t.Name, err)
	}
	for p, v := range produced {
		c.expected[p] = v
	}
	c.m.log.Info("cluster: partition reassignments completed", "topic", t.Name, "partitions", len(produced), "epoch", c.epoch)
	return nil
}
