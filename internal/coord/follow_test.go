package coord_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

// TestFollowSessions: each lost session is closed and followed by a new
// one, a failed connect is retried, and cancelling ends the loop.
func TestFollowSessions(t *testing.T) {
	server := memcoord.NewServer()
	var connects, follows atomic.Int32
	connect := func(ctx context.Context) (coord.Session, error) {
		if connects.Add(1) == 2 {
			return nil, errors.New("refused once")
		}
		return server.Connect(memcoord.Config{}), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sessions := make(chan coord.Session, 10)
	follow := func(ctx context.Context, sess coord.Session) error {
		sessions <- sess
		if follows.Add(1) == 3 {
			<-ctx.Done()
			return ctx.Err()
		}
		return errors.New("session lost")
	}
	done := make(chan struct{})
	go func() {
		coord.FollowSessions(ctx, "test cache", connect, follow, slog.New(slog.DiscardHandler))
		close(done)
	}()
	var seen []coord.Session
	for len(seen) < 3 {
		select {
		case s := <-sessions:
			seen = append(seen, s)
		case <-time.After(time.Minute):
			t.Fatalf("only %d sessions followed", len(seen))
		}
	}
	if seen[0] == seen[1] || seen[1] == seen[2] {
		t.Fatal("a lost session was followed again instead of a new one")
	}
	if n := connects.Load(); n != 4 {
		t.Fatalf("%d connects, want 4 (one refused)", n)
	}
	// The first two sessions were closed when their follow returned.
	for i, s := range seen[:2] {
		if _, _, err := s.Get(context.Background(), "/"); !errors.Is(err, coord.ErrClosed) {
			t.Fatalf("session %d after its follow returned: Get = %v, want ErrClosed", i, err)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("FollowSessions did not return after cancel")
	}
}

// TestFollowerStop: Stop ends the loop, and the session it followed is
// closed by the time Stop returns.
func TestFollowerStop(t *testing.T) {
	server := memcoord.NewServer()
	sessions := make(chan coord.Session, 1)
	follow := func(ctx context.Context, sess coord.Session) error {
		sessions <- sess
		<-ctx.Done()
		return ctx.Err()
	}
	connect := func(context.Context) (coord.Session, error) { return server.Connect(memcoord.Config{}), nil }
	f := coord.StartFollower(context.Background(), "test cache", connect, follow, slog.New(slog.DiscardHandler))
	var sess coord.Session
	select {
	case sess = <-sessions:
	case <-time.After(time.Minute):
		t.Fatal("no session followed")
	}
	f.Stop()
	if _, _, err := sess.Get(context.Background(), "/"); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("session after Stop: Get = %v, want ErrClosed", err)
	}
}
