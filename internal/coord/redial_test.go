package coord_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

var errStoreClosed = errors.New("store closed")

// TestRedialer: one session serves every Do until it ends; an operation
// that finds it ended runs once more on a new one; after Close, Do fails
// with the caller's error.
func TestRedialer(t *testing.T) {
	srv := memcoord.NewServer()
	var opened []coord.Session
	r := coord.NewRedialer(func(context.Context) (coord.Session, error) {
		s := srv.Connect(memcoord.Config{})
		opened = append(opened, s)
		return s, nil
	}, errStoreClosed)
	ctx := context.Background()
	var used []coord.Session
	op := func(s coord.Session) error { used = append(used, s); _, _, err := s.Exists(ctx, "/"); return err }
	for range 3 {
		if err := r.Do(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	if len(opened) != 1 || used[0] != used[2] {
		t.Fatalf("%d sessions opened for 3 operations", len(opened))
	}
	_ = opened[0].Close() // ended under the Redialer
	used = nil
	if err := r.Do(ctx, op); err != nil {
		t.Fatalf("Do after the session ended: %v", err)
	}
	if len(opened) != 2 || len(used) != 2 || used[1] != opened[1] {
		t.Fatalf("after the session ended: %d sessions opened, op ran %d times", len(opened), len(used))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Do(ctx, op); !errors.Is(err, errStoreClosed) {
		t.Fatalf("Do after Close: %v, want the caller's closed error", err)
	}
	if _, _, err := opened[1].Exists(ctx, "/"); err == nil {
		t.Error("Close left the session open")
	}
}
