package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// register creates the persistent roots and the broker's ephemeral node.
//
// An existing /brokers/ids/<id> is told apart as Kafka 0.8 did: one that
// carries this broker's own advertised endpoints is this broker's earlier
// session, killed without closing (a supervisor restarting a crashed
// broker at once), which the coordination service deletes when that
// session times out; register waits for it, watching the node, up to
// Config.staleWait, then registers. One with other endpoints is another
// broker: refused at once. A live duplicate cannot pass for a stale self
// on one host, since it would hold the listener port this broker has just
// bound.
func (m *Member) register(ctx context.Context, s coord.Session) error {
	for _, p := range append(slices.Clone(persistentRoots), shuttingDownPath) {
		if _, err := s.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("cluster: broker %d: creating %s: %w", m.cfg.BrokerID, p, err)
		}
	}
	path := brokerPath(m.cfg.BrokerID)
	bound := m.cfg.staleWait()
	_, err := coord.Register(ctx, s, coord.Registration{
		Path:  path,
		Data:  encodeBroker(m.cfg),
		Bound: bound,
		Ours:  m.ownRegistration,
		Refused: func(held []byte, owner int64, stale bool) error {
			if !stale {
				return fmt.Errorf("%w: broker id %d is already registered in ZooKeeper by another broker (%s: %s)",
					ErrBrokerIDRegistered, m.cfg.BrokerID, path, held)
			}
			return fmt.Errorf("%w: broker id %d is already registered in ZooKeeper with this broker's endpoints "+
				"by session 0x%x, still live after %v (a second broker with the same broker.id and listeners?) (%s)",
				ErrBrokerIDRegistered, m.cfg.BrokerID, owner, bound, path)
		},
		Prefix: fmt.Sprintf("cluster: broker %d: ", m.cfg.BrokerID),
		Waiting: func(owner int64) {
			m.log.Warn("cluster: broker id registered with this broker's endpoints by an earlier session; "+
				"waiting for that session to expire", "path", path, "session", fmt.Sprintf("0x%x", owner),
				"bound", bound)
		},
		Waited: func(waited time.Duration) {
			m.log.Info("cluster: stale registration gone; registered", "waited", waited.Round(time.Millisecond))
		},
	})
	if err != nil {
		return err
	}
	return m.reannounceShutdown(ctx, s) // also when the node was our own create, retried after an ambiguous failure
}

// ownRegistration reports whether a registration's data advertises exactly
// this broker's host, port and endpoints (Kafka 0.8 compared host and
// port). Unparseable data is another broker's.
func (m *Member) ownRegistration(data []byte) bool {
	var theirs brokerRecord
	if err := strictJSON(data, &theirs); err != nil {
		return false
	}
	mine := registrationOf(m.cfg)
	a, b := slices.Clone(mine.Endpoints), slices.Clone(theirs.Endpoints)
	slices.Sort(a)
	slices.Sort(b)
	sameHost := (mine.Host == nil) == (theirs.Host == nil) && (mine.Host == nil || *mine.Host == *theirs.Host)
	return sameHost && mine.Port == theirs.Port && slices.Equal(a, b)
}

// reannounceShutdown carries a controlled shutdown in progress over to a
// new session: its node went with the old one.
func (m *Member) reannounceShutdown(ctx context.Context, s coord.Session) error {
	if !m.shuttingDown.Load() {
		return nil
	}
	return m.announceShutdown(ctx, s)
}
