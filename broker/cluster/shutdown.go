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
// this member's Metadata shows that the controller has handed over: the
// broker leads no partition that another eligible (live, not shutting
// down) ISR member could lead, and is in the ISR of no partition that
// another broker leads (so that no leader waits for it to acknowledge
// writes). A partition whose ISR holds no other eligible broker stays led
// by this broker until it closes. The announcement lasts until the member
// closes (it is made again on a new session); Close should follow.
//
// It returns ctx's error (wrapped, naming the partitions still pending)
// when ctx ends first: the caller bounds the wait (controlled.shutdown
// timeout) and closes anyway.
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
		return snap.IsShuttingDown(id) && len(pendingHandOver(snap, id)) == 0
	})
	if err != nil {
		return fmt.Errorf("cluster: controlled shutdown of broker %d: still leading or in the ISR of %v: %w",
			id, pendingHandOver(snap, id), err)
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

// pendingHandOver lists, as "topic-partition", the partitions that id
// leads while another eligible ISR member could, and those another broker
// leads with id still in the ISR.
func pendingHandOver(snap Snapshot, id int32) []string {
	brokers := newBrokerStates(snap)
	var out []string
	for _, name := range snap.TopicNames() {
		if snap.Topics[name].Deleting {
			continue // the controller no longer elects there
		}
		for _, p := range snap.Topics[name].Partitions {
			var pending bool
			switch {
			case p.Leader == id:
				pending = slices.ContainsFunc(p.ISR, func(r int32) bool { return r != id && brokers.eligible(r) })
			case p.Leader >= 0:
				pending = slices.Contains(p.ISR, id)
			}
			if pending {
				out = append(out, fmt.Sprintf("%s-%d", name, p.ID))
			}
		}
	}
	return out
}
