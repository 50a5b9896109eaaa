package coord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

var errTaken = errors.New("taken")

func registration(data string, bound time.Duration, refusedStale *bool) coord.Registration {
	return coord.Registration{
		Path:    "/ids/1",
		Data:    []byte(data),
		Parents: true,
		Bound:   bound,
		Ours:    func(held []byte) bool { return string(held) == data },
		Refused: func(held []byte, owner int64, stale bool) error {
			*refusedStale = stale
			return errTaken
		},
		Prefix: "test: ",
	}
}

// TestRegister: another process's node is refused at once; an earlier
// session's node of ours is waited for, until it goes or the bound passes;
// a node the session itself holds is reported as held.
func TestRegister(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := memcoord.NewServer()
	old := server.Connect(memcoord.Config{})
	if held, err := coord.Register(ctx, old, registration("me", time.Minute, new(bool))); err != nil || held {
		t.Fatalf("first Register = %v, %v; want false, nil", held, err)
	}
	if held, err := coord.Register(ctx, old, registration("me", time.Minute, new(bool))); err != nil || !held {
		t.Fatalf("Register by the holding session = %v, %v; want true, nil", held, err)
	}

	sess := server.Connect(memcoord.Config{})
	defer sess.Close()
	var stale bool
	if _, err := coord.Register(ctx, sess, registration("other", time.Minute, &stale)); !errors.Is(err, errTaken) || stale {
		t.Fatalf("Register over another process's node = %v (stale %v); want the refusal, not stale", err, stale)
	}
	start := time.Now()
	if _, err := coord.Register(ctx, sess, registration("me", 50*time.Millisecond, &stale)); !errors.Is(err, errTaken) || !stale {
		t.Fatalf("Register over a live node of ours = %v (stale %v); want the stale refusal", err, stale)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("refused before the bound")
	}

	cctx, ccancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer ccancel()
	if _, err := coord.Register(cctx, sess, registration("me", time.Minute, &stale)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Register past its context = %v, want DeadlineExceeded", err)
	}

	r := registration("me", time.Minute, &stale)
	waiting := make(chan struct{})
	var waited bool
	r.Waiting = func(int64) { close(waiting) }
	r.Waited = func(time.Duration) { waited = true }
	go func() {
		<-waiting
		_ = old.Close()
	}()
	if held, err := coord.Register(ctx, sess, r); err != nil || held || !waited {
		t.Fatalf("Register after the earlier session closed = %v, %v (waited %v); want false, nil, true", held, err, waited)
	}
	if _, st, err := sess.Get(ctx, "/ids/1"); err != nil || st.EphemeralOwner != sess.ID() {
		t.Fatalf("node after Register: %+v, %v", st, err)
	}
}
