package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Member is one broker's membership in the cluster: its registration, its
// candidacy for controller (and the controller's work while elected) and a
// watch-fed cache of the cluster metadata.
type Member struct {
	cfg     Config
	log     *slog.Logger
	connect coord.SessionFactory

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the run loop has stopped

	mu      sync.Mutex
	session coord.Session
	snap    Snapshot
	changed chan struct{} // closed and replaced on every metadata change

	controller atomic.Bool
	// elections carries ElectLeaders requests to the controller's loop
	// (electadmin.go).
	elections chan electionRequest
	// shuttingDown is set by ControlledShutdown; a new session announces
	// it again.
	shuttingDown atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Join opens a session, registers the broker at /brokers/ids/<id>, starts
// watching the cluster metadata and standing for controller, and returns
// once Metadata reflects the cluster. A broker id registered with other
// endpoints fails at once with an error wrapping ErrBrokerIDRegistered;
// one registered with this broker's own endpoints is taken for a stale
// session of this broker and waited out (see register).
func Join(ctx context.Context, connect coord.SessionFactory, cfg Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.logger()
	s, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: broker %d: connect: %w", cfg.BrokerID, err)
	}
	m := &Member{cfg: cfg, log: log, connect: connect, done: make(chan struct{}),
		session: s, changed: make(chan struct{}), elections: make(chan electionRequest)}
	if err := m.register(ctx, s); err != nil {
		_ = s.Close()
		return nil, err
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	go m.run(s)
	if _, err := m.AwaitMetadata(ctx, func(snap Snapshot) bool { return snap.session != 0 }); err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("cluster: broker %d: loading metadata: %w", cfg.BrokerID, err)
	}
	log.Info("cluster: joined", "session", fmt.Sprintf("0x%x", s.ID()))
	return m, nil
}

// ID returns the broker id.
func (m *Member) ID() int32 { return m.cfg.BrokerID }

// run serves one session after another until Close.
func (m *Member) run(s coord.Session) {
	defer close(m.done)
	for {
		m.serve(s)
		if m.ctx.Err() != nil {
			return
		}
		_ = s.Close() // no-op when expired; ends a session that failed otherwise
		m.log.Warn("cluster: coordination session ended; registering again on a new session")
		if s = m.reconnect(); s == nil {
			return
		}
	}
}

// serve runs the metadata cache and the controller candidacy on s until s
// ends or the member closes.
func (m *Member) serve(s coord.Session) {
	ctx, cancel := context.WithCancel(m.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	ended := make(chan error, 2)
	loaded := make(chan struct{})
	var loadOnce sync.Once
	wg.Go(func() {
		cache := newTreeCache(s, m.log, m.cfg.retryBackoff())
		ended <- cache.run(ctx, func(snap Snapshot) {
			m.publish(snap)
			loadOnce.Do(func() { close(loaded) })
		})
	})
	wg.Go(func() {
		select {
		case <-loaded:
			ended <- m.campaign(ctx, s)
		case <-ctx.Done():
		}
	})
	for {
		select {
		case st := <-s.States():
			if st != coord.StateExpired {
				continue
			}
			m.log.Warn("cluster: coordination session expired", "session", fmt.Sprintf("0x%x", s.ID()))
			return
		case err := <-ended:
			if ctx.Err() == nil {
				m.log.Warn("cluster: session work stopped", "err", err)
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

// reconnect opens sessions until one registers, backing off between
// attempts; nil once the member is closed.
func (m *Member) reconnect() coord.Session {
	pause := m.cfg.retryBackoff()
	for {
		s, err := m.connect(m.ctx)
		if err == nil {
			if err = m.register(m.ctx, s); err == nil {
				m.mu.Lock()
				m.session = s
				m.mu.Unlock()
				m.log.Info("cluster: registered again", "session", fmt.Sprintf("0x%x", s.ID()))
				return s
			}
			_ = s.Close()
		}
		if m.ctx.Err() != nil {
			return nil
		}
		m.log.Warn("cluster: re-registration failed; retrying", "err", err, "pause", pause)
		select {
		case <-time.After(pause):
		case <-m.ctx.Done():
			return nil
		}
		pause = min(2*pause, maxRetryBackoff)
	}
}

func (m *Member) publish(snap Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if reflect.DeepEqual(m.snap, snap) {
		return
	}
	m.snap = snap
	close(m.changed)
	m.changed = make(chan struct{})
}

// currentSession returns the session admin calls use, or ErrClosed.
func (m *Member) currentSession() (coord.Session, error) {
	if m.ctx.Err() != nil {
		return nil, ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.session, nil
}

// Metadata returns the latest snapshot. Between a session expiry and the
// next registration it is the last one seen (stale but available).
func (m *Member) Metadata() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}

// Changes returns a channel that is closed at the next change of Metadata.
// Changes are coalesced: take the channel, then read Metadata, then wait;
// call Changes again for the change after that. Any number of goroutines
// may wait on it.
func (m *Member) Changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// AwaitMetadata waits until cond holds for Metadata and returns that
// snapshot; or ctx's error, or ErrClosed once the member is closed, with
// the last snapshot.
func (m *Member) AwaitMetadata(ctx context.Context, cond func(Snapshot) bool) (Snapshot, error) {
	for {
		ch := m.Changes()
		snap := m.Metadata()
		if cond(snap) {
			return snap, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-m.done:
			return snap, ErrClosed
		}
	}
}

// Leads reports whether Metadata names this broker the leader of the
// partition.
func (m *Member) Leads(topic string, p int32) bool {
	part, ok := m.Metadata().Partition(topic, p)
	return ok && part.Leader == m.cfg.BrokerID
}

// IsController reports whether this member is the elected controller and
// has taken office (incremented the controller epoch).
func (m *Member) IsController() bool { return m.controller.Load() }

// Close leaves the cluster: the controller work stops, the session closes
// and with it the broker's ephemeral registration (and /controller if held).
// Metadata keeps returning the last snapshot.
func (m *Member) Close() error {
	m.closeOnce.Do(func() {
		m.halt()
		m.mu.Lock()
		s := m.session
		m.mu.Unlock()
		m.closeErr = s.Close()
		m.log.Info("cluster: left")
	})
	return m.closeErr
}

// halt stops every goroutine without touching the coordination service:
// Close follows it with a session close; tests use it alone to simulate a
// crash (the session then dies by expiry).
func (m *Member) halt() {
	if m.cancel == nil { // Join failed before the run loop started
		return
	}
	m.cancel()
	<-m.done
}
