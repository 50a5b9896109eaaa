package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/tributary/tributary/internal/coord"
)

// shuttingDownPath holds one ephemeral child per broker in controlled
// shutdown. Kafka has no such node (its brokers ask the controller over
// RPC); it lives under /tributary, this project's own prefix, so that it
// can never clash with a node of Kafka's layout or of a Kafka-era tool.
const shuttingDownPath = "/tributary/shutting_down"

func shuttingDownBrokerPath(id int32) string {
	return coord.Join(shuttingDownPath, strconv.Itoa(int(id)))
}

// ControlledShutdown announces that the broker is about to stop, by
// creating the ephemeral /tributary/shutting_down/<id>, and waits until
// this member's Metadata shows that it leads no partition that another
// eligible (live, not shutting down) ISR member could lead. The controller
// meanwhile moves those leaderships away and removes the broker from every
// ISR. A partition whose ISR holds no other eligible broker stays led by
// this broker until it closes. The announcement lasts until the member
// closes (it is made again on a new session); Close should follow.
//
// It returns ctx's error (wrapped, naming the partitions still led) when
// ctx ends first: the caller bounds the wait (controlled.shutdown timeout)
// and closes anyway.
func (m *Member) ControlledShutdown(ctx context.Context) error {
	s, err := m.currentSession()
	if err != nil {
		return err
	}
	m.shuttingDown.Store(true)
	if err := m.announceShutdown(ctx, s); err != nil {
		return err
	}
	id := m.cfg.BrokerID
	m.log.Info("cluster: controlled shutdown: waiting for leadership to move away")
	snap, err := m.AwaitMetadata(ctx, func(snap Snapshot) bool {
		return snap.IsShuttingDown(id) && len(movableLeaderships(snap, id)) == 0
	})
	if err != nil {
		return fmt.Errorf("cluster: controlled shutdown of broker %d: still leading %v: %w",
			id, movableLeaderships(snap, id), err)
	}
	m.log.Info("cluster: controlled shutdown: no partition left to hand over")
	return nil
}

// announceShutdown creates the broker's shutting-down node on s. A node
// left by an earlier session of this broker is replaced.
func (m *Member) announceShutdown(ctx context.Context, s coord.Session) error {
	path := shuttingDownBrokerPath(m.cfg.BrokerID)
	for {
		_, err := s.CreateAll(ctx, path, nil, coord.Ephemeral)
		if err == nil {
			return nil
		}
		if !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("cluster: broker %d: creating %s: %w", m.cfg.BrokerID, path, err)
		}
		ok, st, err := s.Exists(ctx, path)
		if err != nil {
			return fmt.Errorf("cluster: broker %d: reading %s: %w", m.cfg.BrokerID, path, err)
		}
		if ok && st.EphemeralOwner == s.ID() {
			return nil
		}
		if ok {
			err := s.Delete(ctx, path, st.Version)
			if err != nil && !errors.Is(err, coord.ErrNoNode) && !errors.Is(err, coord.ErrBadVersion) {
				return fmt.Errorf("cluster: broker %d: removing the stale %s: %w", m.cfg.BrokerID, path, err)
			}
		}
	}
}

// movableLeaderships lists, as "topic-partition", the partitions that id
// leads and whose ISR holds another broker that is live and not shutting
// down.
func movableLeaderships(snap Snapshot, id int32) []string {
	brokers := newBrokerStates(snap)
	var out []string
	for _, name := range snap.TopicNames() {
		if snap.Topics[name].Deleting {
			continue // the controller no longer elects there
		}
		for _, p := range snap.Topics[name].Partitions {
			if p.Leader != id {
				continue
			}
			if slices.ContainsFunc(p.ISR, func(r int32) bool { return r != id && brokers.eligible(r) }) {
				out = append(out, fmt.Sprintf("%s-%d", name, p.ID))
			}
		}
	}
	return out
}
