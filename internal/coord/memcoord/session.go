package memcoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// stateBuffer is the capacity of a session's States channel.
const stateBuffer = 16

type sessionState int

const (
	stateLive sessionState = iota
	stateClosed
	stateExpired
)

// Session is one client of a Server; it implements coord.Session.
type Session struct {
	srv    *Server
	id     int64
	log    *slog.Logger
	states chan coord.SessionState
	state  sessionState // guarded by srv.mu
}

var _ coord.Session = (*Session)(nil)

// ID returns the session id, the EphemeralOwner of the nodes it creates.
func (s *Session) ID() int64 { return s.id }

// States delivers StateConnected once and StateExpired if the session
// expires. The channel is never closed.
func (s *Session) States() <-chan coord.SessionState { return s.states }

// deliverState queues st, dropping the oldest queued state if the buffer is
// full so that StateExpired always gets through. Called under srv.mu, which
// makes this the only sender.
func (s *Session) deliverState(st coord.SessionState) {
	for {
		select {
		case s.states <- st:
			return
		default:
			select {
			case <-s.states:
			default:
			}
		}
	}
}

// begin locks the server for one call if the session and ctx allow it.
func (s *Session) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.srv.mu.Lock()
	switch s.state {
	case stateClosed:
		s.srv.mu.Unlock()
		return coord.ErrClosed
	case stateExpired:
		s.srv.mu.Unlock()
		return coord.ErrSessionExpired
	}
	return nil
}

func (s *Session) end() { s.srv.mu.Unlock() }

// Create implements coord.Session.
func (s *Session) Create(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	defer s.end()
	var t txn
	name, err := s.srv.create(&t, s.id, path, data, mode)
	if err != nil {
		return "", err
	}
	if err := s.srv.commit(&t); err != nil {
		return "", err
	}
	return name, nil
}

// CreateAll implements coord.Session. The missing parents and the node are
// created under one lock, so no other session sees a half-made chain.
func (s *Session) CreateAll(ctx context.Context, path string, data []byte, mode coord.CreateMode) (string, error) {
	if err := coord.ValidatePath(path); err != nil {
		return "", err
	}
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	defer s.end()
	var missing []string
	for p := coord.Parent(path); p != "/" && s.srv.lookup(p) == nil; p = coord.Parent(p) {
		missing = append(missing, p)
	}
	var t txn
	for _, p := range slices.Backward(missing) {
		if _, err := s.srv.create(&t, s.id, p, nil, coord.Persistent); err != nil {
			return "", errors.Join(err, s.srv.commit(&t))
		}
	}
	name, err := s.srv.create(&t, s.id, path, data, mode)
	if cerr := s.srv.commit(&t); cerr != nil {
		return "", errors.Join(err, cerr)
	}
	return name, err
}

// Get implements coord.Session.
func (s *Session) Get(ctx context.Context, path string) ([]byte, coord.Stat, error) {
	data, st, _, err := s.get(ctx, path, false)
	return data, st, err
}

// GetW implements coord.Session. No watch is left when the node is missing.
func (s *Session) GetW(ctx context.Context, path string) ([]byte, coord.Stat, <-chan coord.Event, error) {
	return s.get(ctx, path, true)
}

func (s *Session) get(ctx context.Context, path string, watch bool) ([]byte, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	defer s.end()
	n := s.srv.lookup(path)
	if n == nil {
		return nil, coord.Stat{}, nil, fmt.Errorf("memcoord: get %s: %w", path, coord.ErrNoNode)
	}
	var ch <-chan coord.Event
	if watch {
		ch = s.srv.addWatch(s.srv.dataWatches, s, path)
	}
	return clone(n.data), n.statCopy(), ch, nil
}

// Exists implements coord.Session.
func (s *Session) Exists(ctx context.Context, path string) (bool, coord.Stat, error) {
	ok, st, _, err := s.exists(ctx, path, false)
	return ok, st, err
}

// ExistsW implements coord.Session; the watch is set whether or not the node
// exists, and fires EventNodeCreated if it did not.
func (s *Session) ExistsW(ctx context.Context, path string) (bool, coord.Stat, <-chan coord.Event, error) {
	return s.exists(ctx, path, true)
}

func (s *Session) exists(ctx context.Context, path string, watch bool) (bool, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return false, coord.Stat{}, nil, err
	}
	if err := s.begin(ctx); err != nil {
		return false, coord.Stat{}, nil, err
	}
	defer s.end()
	var ch <-chan coord.Event
	if watch {
		ch = s.srv.addWatch(s.srv.dataWatches, s, path)
	}
	n := s.srv.lookup(path)
	if n == nil {
		return false, coord.Stat{}, ch, nil
	}
	return true, n.statCopy(), ch, nil
}

// Set implements coord.Session.
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if err := s.begin(ctx); err != nil {
		return coord.Stat{}, err
	}
	defer s.end()
	var t txn
	st, err := s.srv.set(&t, path, data, version)
	if err != nil {
		return coord.Stat{}, err
	}
	if err := s.srv.commit(&t); err != nil {
		return coord.Stat{}, err
	}
	return st, nil
}

// Delete implements coord.Session.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	var t txn
	if err := s.srv.delete(&t, path, version); err != nil {
		return err
	}
	return s.srv.commit(&t)
}

// Children implements coord.Session.
func (s *Session) Children(ctx context.Context, path string) ([]string, coord.Stat, error) {
	names, st, _, err := s.children(ctx, path, false)
	return names, st, err
}

// ChildrenW implements coord.Session. No watch is left when the node is
// missing.
func (s *Session) ChildrenW(ctx context.Context, path string) ([]string, coord.Stat, <-chan coord.Event, error) {
	return s.children(ctx, path, true)
}

func (s *Session) children(ctx context.Context, path string, watch bool) ([]string, coord.Stat, <-chan coord.Event, error) {
	if err := coord.ValidatePath(path); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, coord.Stat{}, nil, err
	}
	defer s.end()
	n := s.srv.lookup(path)
	if n == nil {
		return nil, coord.Stat{}, nil, fmt.Errorf("memcoord: children %s: %w", path, coord.ErrNoNode)
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	var ch <-chan coord.Event
	if watch {
		ch = s.srv.addWatch(s.srv.childWatches, s, path)
	}
	return names, n.statCopy(), ch, nil
}

// Multi implements coord.Session: ops are applied in order, each seeing the
// effects of the ones before; on the first failure all are undone and no
// watch fires.
func (s *Session) Multi(ctx context.Context, ops ...coord.Op) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	var t txn
	for i, op := range ops {
		var err error
		switch op.Kind {
		case coord.OpCreate:
			_, err = s.srv.create(&t, s.id, op.Path, op.Data, op.Mode)
		case coord.OpSet:
			_, err = s.srv.set(&t, op.Path, op.Data, op.Version)
		case coord.OpDelete:
			err = s.srv.delete(&t, op.Path, op.Version)
		case coord.OpCheck:
			err = s.srv.check(op.Path, op.Version)
		default:
			err = fmt.Errorf("memcoord: unknown op kind %d", op.Kind)
		}
		if err != nil {
			t.rollback()
			return fmt.Errorf("memcoord: multi op %d: %w", i, err)
		}
	}
	return s.srv.commit(&t)
}

// Close ends the session: its pending watches fire with EventSessionLost and
// its ephemeral nodes are deleted. Closing twice, or after expiry, is a no-op.
func (s *Session) Close() error {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if s.state != stateLive {
		return nil
	}
	s.srv.endLocked(s, stateClosed)
	s.log.Debug("memcoord session closed")
	return nil
}
