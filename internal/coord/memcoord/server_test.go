package memcoord

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tributary/tributary/internal/coord"
)

func TestExpireUnknownSession(t *testing.T) {
	srv := newServer(t)
	s := srv.Connect(Config{})
	if err := srv.Expire(s.ID() + 1); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("expire unknown: %v", err)
	}
	if err := srv.Expire(s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Expire(s.ID()); !errors.Is(err, ErrUnknownSession) {
		t.Fatalf("expire twice: %v", err)
	}
}

func TestSessions(t *testing.T) {
	srv := newServer(t)
	a, b, c := srv.Connect(Config{}), srv.Connect(Config{}), srv.Connect(Config{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Sessions(); !slices.Equal(got, []int64{a.ID(), c.ID()}) {
		t.Fatalf("sessions %v, want %v", got, []int64{a.ID(), c.ID()})
	}
}

// Expiry must get through a States buffer nobody drains.
func TestExpiredDeliveredWhenStatesFull(t *testing.T) {
	srv := newServer(t)
	s := srv.Connect(Config{})
	for range stateBuffer * 2 {
		s.deliverState(coord.StateConnected)
	}
	if err := srv.Expire(s.ID()); err != nil {
		t.Fatal(err)
	}
	var last coord.SessionState
	for len(s.States()) > 0 {
		last = <-s.States()
	}
	if last != coord.StateExpired {
		t.Fatalf("last state %v, want StateExpired", last)
	}
}

func TestCanceledContext(t *testing.T) {
	srv := newServer(t)
	s := srv.Connect(Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Create(ctx, "/a", nil, coord.Persistent); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with canceled ctx: %v", err)
	}
	if ok, _, _ := s.Exists(t.Context(), "/a"); ok {
		t.Fatal("node created despite canceled ctx")
	}
}
