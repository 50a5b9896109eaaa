package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// retryPause spaces election attempts after a connection loss.
const retryPause = 100 * time.Millisecond

// Leadership is held by the winner of Elect until Lost is closed.
type Leadership struct {
	s    Session
	path string
	// Version is the leader node's data version when the election was won.
	Version int32

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
}

// Elect makes s the holder of the ephemeral node at path, with data as its
// content, and returns when it is: the controller (/controller) and job
// locks are elected this way. Missing parents are created. While another
// session holds the node, Elect watches it and competes again when it is
// deleted (its holder resigned, closed or expired).
//
// Elect returns ctx's error if ctx ends first, and an error wrapping
// ErrSessionExpired or ErrClosed if s ends first. If s already holds the node
// (a retry after an ambiguous create), Elect returns the existing leadership
// without rewriting data.
//
// Leadership is lost when the node is deleted or the session ends; it is
// not lost on a mere disconnection, which the session may survive.
func Elect(ctx context.Context, s Session, path string, data []byte) (*Leadership, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	for {
		_, err := s.CreateAll(ctx, path, data, Ephemeral)
		if err == nil {
			return newLeadership(s, path, 0), nil
		}
		if errors.Is(err, ErrUnavailable) {
			// The create may have taken effect; the next round finds the
			// node and recognises it as ours by its owner.
			select {
			case <-time.After(retryPause):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !errors.Is(err, ErrNodeExists) {
			return nil, fmt.Errorf("coord: elect %s: %w", path, err)
		}
		ok, st, ch, err := s.ExistsW(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("coord: elect %s: %w", path, err)
		}
		if !ok {
			continue // deleted in between: compete again (the watch fires and is dropped)
		}
		if st.EphemeralOwner == s.ID() {
			return newLeadership(s, path, st.Version), nil
		}
		select {
		case ev := <-ch:
			if ev.Type == EventSessionLost {
				return nil, fmt.Errorf("coord: elect %s: %w", path, sessionEnd(ctx, s))
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// sessionEnd says why a watch reported EventSessionLost, by asking the
// session (which answers ErrClosed or ErrSessionExpired).
func sessionEnd(ctx context.Context, s Session) error {
	if _, _, err := s.Exists(ctx, "/"); err != nil {
		return err
	}
	return ErrSessionExpired
}

func newLeadership(s Session, path string, version int32) *Leadership {
	l := &Leadership{s: s, path: path, Version: version, lost: make(chan struct{}), stop: make(chan struct{})}
	go l.watch()
	return l
}

// Path returns the leader node's path.
func (l *Leadership) Path() string { return l.path }

// Lost is closed when the leadership ends: the node was deleted (by Resign
// or by someone else), now belongs to another session, or the session
// expired or was closed. The holder must stop acting as leader at once.
func (l *Leadership) Lost() <-chan struct{} { return l.lost }

// Resign deletes the leader node if this session still holds it, letting
// another candidate win, and closes Lost.
func (l *Leadership) Resign(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	defer l.markLost()
	_, st, err := l.s.Get(ctx, l.path)
	switch {
	case errors.Is(err, ErrNoNode):
		return nil
	case err != nil:
		return fmt.Errorf("coord: resign %s: %w", l.path, err)
	case st.EphemeralOwner != l.s.ID():
		return nil
	}
	// The version guards against deleting a node another session made
	// after ours vanished between the two calls.
	if err := l.s.Delete(ctx, l.path, st.Version); err != nil && !errors.Is(err, ErrNoNode) {
		return fmt.Errorf("coord: resign %s: %w", l.path, err)
	}
	return nil
}

func (l *Leadership) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

// watch re-arms an exists-watch on the node until it is gone or no longer
// ours. Calls use a background context: they only fail when the session
// ends, which is itself a loss.
func (l *Leadership) watch() {
	defer l.markLost()
	ctx := context.Background()
	for {
		ok, st, ch, err := l.s.ExistsW(ctx, l.path)
		if err != nil || !ok || st.EphemeralOwner != l.s.ID() {
			return
		}
		select {
		case ev := <-ch:
			if ev.Type != EventNodeDataChanged {
				return
			}
		case <-l.stop:
			return
		}
	}
}
