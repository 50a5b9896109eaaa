package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// ElectionType is Kafka's ElectLeaders election_type.
type ElectionType int8

const (
	// ElectPreferred moves leadership to the preferred replica (the first
	// of the assignment) when it is live and in the ISR.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition that has none: from the
	// ISR when one of it is live, else the first live replica, alone in
	// the ISR (records the ISR had and it lacks are lost).
	ElectUnclean ElectionType = 1
)

// PartitionRef names one partition.
type PartitionRef struct {
	Topic     string
	Partition int32
}

// ElectionResult is one partition's outcome: Err nil (elected Leader) or
// wrapping ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable or ErrUnknownTopic.
type ElectionResult struct {
	PartitionRef
	Leader int32
	Err    error
}

type electionRequest struct {
	typ   ElectionType
	parts []PartitionRef // nil: every partition
	reply chan electionReply
}

type electionReply struct {
	results []ElectionResult
	err     error
}

// ElectLeaders runs an administrative election (Kafka's ElectLeaders API)
// on the given partitions, nil meaning all: the controller writes each
// elected partition's state (leader_epoch bumped, fenced like its own
// elections) and the call returns once written, without waiting for the
// metadata to show it. Only the controller serves it: another member
// returns ErrNotController at once, so that the client asks the
// controller, as Kafka's admin client does. A preferred leader stays: the
// controller's own reconciliation never moves a live in-sync leader.
func (m *Member) ElectLeaders(ctx context.Context, typ ElectionType, parts []PartitionRef) ([]ElectionResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("cluster: unknown election type %d", typ)
	}
	if !m.controller.Load() {
		return nil, fmt.Errorf("%w (controller: %d)", ErrNotController, m.Metadata().Controller)
	}
	req := electionRequest{typ: typ, parts: parts, reply: make(chan electionReply, 1)}
	select {
	case m.elections <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-req.reply:
		return r.results, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxElectionConflicts bounds the re-reads of one topic's states when a
// leader's ISR write races an administrative election.
const maxElectionConflicts = 5

// adminElections runs req in the controller's loop on its current
// snapshot.
func (c *controller) adminElections(ctx context.Context, req electionRequest) electionReply {
	snap := c.m.Metadata()
	brokers := newBrokerStates(snap)
	byTopic := map[string][]int32{}
	var results []ElectionResult
	if req.parts == nil {
		for _, name := range snap.TopicNames() {
			for _, p := range snap.Topics[name].Partitions {
				byTopic[name] = append(byTopic[name], p.ID)
			}
		}
	}
	for _, r := range req.parts {
		if _, ok := snap.Partition(r.Topic, r.Partition); !ok || snap.Topics[r.Topic].Deleting {
			results = append(results, ElectionResult{PartitionRef: r, Leader: -1,
				Err: fmt.Errorf("%w: %s-%d", ErrUnknownTopic, r.Topic, r.Partition)})
			continue
		}
		if !slices.Contains(byTopic[r.Topic], r.Partition) {
			byTopic[r.Topic] = append(byTopic[r.Topic], r.Partition)
		}
	}
	for _, name := range snap.TopicNames() {
		ids := byTopic[name]
		if len(ids) == 0 {
			continue
		}
		res, err := c.electTopic(ctx, snap.Topics[name], ids, brokers, req.typ)
		if err != nil {
			if errors.Is(err, errStaleController) || sessionEnded(err) {
				return electionReply{err: fmt.Errorf("%w: %w", ErrNotController, err)}
			}
			return electionReply{err: err}
		}
		results = append(results, res...)
	}
	return electionReply{results: results}
}

// electTopic decides and writes the elections of the given partitions of
// t in one fenced multi-op, re-reading the states on a conflict.
func (c *controller) electTopic(ctx context.Context, t Topic, ids []int32, brokers brokerStates, typ ElectionType) ([]ElectionResult, error) {
	parts := make([]Partition, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, t.Partitions[id])
	}
	for conflicts := 0; ; conflicts++ {
		ops := []coord.Op{c.fence()}
		produced := map[string]int32{}
		var results []ElectionResult
		for _, p := range parts {
			ref := PartitionRef{t.Name, p.ID}
			leader, isr, err := adminElect(p, brokers, typ)
			results = append(results, ElectionResult{PartitionRef: ref, Leader: leader, Err: err})
			if err != nil {
				continue
			}
			rec := stateRecord{ControllerEpoch: c.epoch, Leader: leader, LeaderEpoch: p.LeaderEpoch + 1, ISR: isr}
			path := statePath(t.Name, p.ID)
			ops = append(ops, coord.Op{Kind: coord.OpSet, Path: path, Data: encodeState(rec), Version: p.stateVersion})
			produced[path] = p.stateVersion + 1
		}
		if len(produced) == 0 {
			return results, nil
		}
		err := c.s.Multi(ctx, ops...)
		if err == nil {
			for p, v := range produced {
				c.expected[p] = v
			}
			c.m.log.Info("cluster: administrative leader election", "topic", t.Name, "type", typ, "partitions", len(produced), "epoch", c.epoch)
			return results, nil
		}
		err = c.failed(ctx, "electing leaders of "+t.Name, err)
		conflict := errors.Is(err, coord.ErrBadVersion)
		if errors.Is(err, errStaleController) || !conflict || conflicts >= maxElectionConflicts {
			return nil, err
		}
		var rerr error
		if parts, rerr = c.readStates(ctx, t.Name, parts); rerr != nil {
			return nil, c.failed(ctx, "reading the states of "+t.Name, rerr)
		}
	}
}

// adminElect is one partition's administrative election: the new leader
// and ISR, or why there is none.
func adminElect(p Partition, b brokerStates, typ ElectionType) (int32, []int32, error) {
	if p.stateVersion < 0 {
		// Not elected by the controller yet: its own election comes.
		return -1, nil, fmt.Errorf("%w: partition has no state yet", ErrEligibleLeadersNotAvailable)
	}
	switch typ {
	case ElectPreferred:
		pref := p.Replicas[0]
		switch {
		case p.Leader == pref:
			return -1, nil, fmt.Errorf("%w: preferred replica %d already leads", ErrElectionNotNeeded, pref)
		case !b.eligible(pref) || !slices.Contains(p.ISR, pref):
			return -1, nil, fmt.Errorf("%w: preferred replica %d is not live and in the ISR %v", ErrPreferredLeaderNotAvailable, pref, p.ISR)
		}
		return pref, p.ISR, nil
	default:
		if p.Leader >= 0 && b.live[p.Leader] {
			return -1, nil, fmt.Errorf("%w: broker %d leads", ErrElectionNotNeeded, p.Leader)
		}
		if isr := filter(p.ISR, b.eligible); len(isr) > 0 {
			for _, r := range p.Replicas {
				if slices.Contains(isr, r) {
					return r, isr, nil
				}
			}
		}
		for _, r := range p.Replicas {
			if b.eligible(r) {
				return r, []int32{r}, nil
			}
		}
		return -1, nil, fmt.Errorf("%w: no replica of %v is live", ErrEligibleLeadersNotAvailable, p.Replicas)
	}
}
