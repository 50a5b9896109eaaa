package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// AlterISR is a partition leader's ISR change (shrink or expand), Kafka
// 0.8's updateLeaderAndIsr: it writes isr into the partition's state node
// by compare-and-set on the node's version, leader and leader_epoch
// unchanged. The caller states what it believes: that it leads the
// partition at leaderEpoch. When the compare-and-set fails the state is
// read again and the write redone, as long as ZooKeeper still names this
// broker leader at leaderEpoch; once it does not, AlterISR fails with
// ErrFenced (the controller elected another leader, or rewrote the ISR
// and bumped the epoch).
//
// isr must hold this broker, only replicas of the partition and no
// broker twice (else ErrInvalidISR); an unknown partition is
// ErrUnknownTopic. An ISR equal to the stored one is not written.
//
// It returns the state as written. Before returning, with or without
// error, it waits until this member's Metadata shows that state or a
// newer one, so that the caller's next look at Metadata is not older than
// what AlterISR saw; the wait is bounded by ctx, and a write that landed
// is returned as written even when that wait ends first (a leader must
// act on the ISR ZooKeeper holds).
func (m *Member) AlterISR(ctx context.Context, topic string, p int32, leaderEpoch int32, isr []int32) (Partition, error) {
	s, err := m.currentSession()
	if err != nil {
		return Partition{}, err
	}
	part, ok := m.Metadata().Partition(topic, p)
	if !ok {
		return Partition{}, fmt.Errorf("%w: %s partition %d", ErrUnknownTopic, topic, p)
	}
	if err := checkISR(m.cfg.BrokerID, part.Replicas, isr); err != nil {
		return Partition{}, fmt.Errorf("%w: %s-%d: %w", ErrInvalidISR, topic, p, err)
	}
	rec, version, err := alterISR(ctx, s, m.cfg.BrokerID, topic, p, leaderEpoch, isr)
	if version >= 0 {
		snap, werr := m.AwaitMetadata(ctx, func(snap Snapshot) bool {
			cur, ok := snap.Partition(topic, p)
			return !ok || cur.stateVersion >= version
		})
		if err == nil && werr != nil {
			// The write landed: the caller must act on it (a leader that
			// went on with the old ISR could acknowledge without a
			// follower the controller may elect from the new one).
			m.log.Warn("cluster: ISR written; the metadata does not show it yet", "topic", topic, "partition", p, "err", werr)
		}
		if cur, ok := snap.Partition(topic, p); ok {
			part = cur
		}
	}
	if err != nil {
		return Partition{}, err
	}
	part.Leader, part.LeaderEpoch, part.ISR, part.stateVersion = rec.Leader, rec.LeaderEpoch, rec.ISR, version
	m.log.Info("cluster: ISR changed", "topic", topic, "partition", p, "leader_epoch", rec.LeaderEpoch, "isr", rec.ISR)
	return part, nil
}

// alterISR is AlterISR's compare-and-set loop on session s. It returns the
// state it wrote (or found equal) with the node's version; on ErrFenced
// the state found and its version; version -1 when there is no state.
func alterISR(ctx context.Context, s coord.Session, self int32, topic string, p int32, leaderEpoch int32, isr []int32) (stateRecord, int32, error) {
	path := statePath(topic, p)
	for {
		data, st, err := s.Get(ctx, path)
		if errors.Is(err, coord.ErrNoNode) {
			return stateRecord{}, -1, fmt.Errorf("%w: %s-%d has no state node (topic deleted?)", ErrFenced, topic, p)
		}
		if err != nil {
			return stateRecord{}, -1, fmt.Errorf("cluster: AlterISR %s-%d: %w", topic, p, err)
		}
		rec, err := decodeState(data)
		if err != nil {
			return stateRecord{}, -1, fmt.Errorf("cluster: AlterISR %s-%d: %w", topic, p, err)
		}
		if rec.Leader != self || rec.LeaderEpoch != leaderEpoch {
			return rec, st.Version, fmt.Errorf("%w: %s-%d: broker %d at leader epoch %d, but the state names leader %d at epoch %d",
				ErrFenced, topic, p, self, leaderEpoch, rec.Leader, rec.LeaderEpoch)
		}
		if slices.Equal(rec.ISR, isr) {
			return rec, st.Version, nil
		}
		rec.ISR = slices.Clone(isr)
		st, err = s.Set(ctx, path, encodeState(rec), st.Version)
		switch {
		case err == nil:
			return rec, st.Version, nil
		case errors.Is(err, coord.ErrBadVersion):
			// Written meanwhile (by the controller, or by our own earlier
			// attempt whose answer was lost): look again.
			if ctx.Err() != nil {
				return stateRecord{}, -1, ctx.Err()
			}
		default:
			return stateRecord{}, -1, fmt.Errorf("cluster: AlterISR %s-%d: %w", topic, p, err)
		}
	}
}

// checkISR refuses an ISR without the leader, with a repeated broker or
// with a broker that is not a replica.
func checkISR(leader int32, replicas, isr []int32) error {
	if !slices.Contains(isr, leader) {
		return fmt.Errorf("%v does not hold the leader %d", isr, leader)
	}
	for i, id := range isr {
		if !slices.Contains(replicas, id) {
			return fmt.Errorf("%v: broker %d is not a replica (replicas %v)", isr, id, replicas)
		}
		if slices.Contains(isr[:i], id) {
			return fmt.Errorf("%v repeats broker %d", isr, id)
		}
	}
	return nil
}
