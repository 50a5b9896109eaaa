package coord

import (
	"context"
	"log/slog"
	"time"
)

// FollowBackoff is how long FollowSessions waits after a session ended
// before it opens the next one.
const FollowBackoff = 500 * time.Millisecond

// FollowSessions keeps a cache that follows the tree: it opens a session
// with connect, runs follow on it until follow returns (the session was
// lost or a read failed), closes it, logs what ended it under what (the
// cache's name, e.g. "ACL cache"), waits FollowBackoff and starts again
// with a new session, until ctx is done. follow must load the whole state
// again on each session: notifications missed between two sessions are not
// replayed.
func FollowSessions(ctx context.Context, what string, connect SessionFactory,
	follow func(context.Context, Session) error, log *slog.Logger) {
	for ctx.Err() == nil {
		sess, err := connect(ctx)
		if err == nil {
			err = follow(ctx, sess)
			_ = sess.Close()
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn(what+" lost its session; reconnecting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(FollowBackoff):
		}
	}
}

// Follower is a FollowSessions loop running in the background, for a
// component whose cache follows the tree from its start to its Close.
type Follower struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartFollower runs FollowSessions(ctx, what, connect, follow, log) in a
// goroutine until Stop or until ctx ends.
func StartFollower(ctx context.Context, what string, connect SessionFactory,
	follow func(context.Context, Session) error, log *slog.Logger) *Follower {
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		FollowSessions(ctx, what, connect, follow, log)
	}()
	return f
}

// Stop ends the loop and waits for it: its last session is closed when
// Stop returns.
func (f *Follower) Stop() {
	f.cancel()
	<-f.done
}
