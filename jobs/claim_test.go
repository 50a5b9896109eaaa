package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

// releasingSession deletes the job's lock right after a claim's multi-op
// found it held, as when the holder's run ends between the two steps.
type releasingSession struct {
	coord.Session
	lock     string
	released bool
}

func (s *releasingSession) Multi(ctx context.Context, ops ...coord.Op) error {
	err := s.Session.Multi(ctx, ops...)
	if err != nil && !s.released && errors.Is(err, coord.ErrNodeExists) {
		s.released = true
		if derr := s.Session.Delete(ctx, s.lock, coord.AnyVersion); derr != nil {
			return derr
		}
	}
	return err
}

// TestClaimAfterLockReleased: a claim that finds the lock held, then gone
// before it reads whose it was, claims again and wins, instead of
// recording a skipped run naming no previous run (the skip "previous run
// still running on " a clean-clone CI saw in TestTwoSchedulersKillOne).
func TestClaimAfterLockReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := memcoord.NewServer()
	holder := srv.Connect(memcoord.Config{})
	t.Cleanup(func() { holder.Close() })
	claimer := srv.Connect(memcoord.Config{})
	t.Cleanup(func() { claimer.Close() })

	hs := NewStore(holder, "/jobs", 10)
	if err := hs.Publish(ctx, Spec{Name: "tick"}); err != nil {
		t.Fatal(err)
	}
	first := &Run{ID: "1-s", Job: "tick", ScheduledAt: time.Now(), Scheduler: "A", Status: StatusRunning}
	if outcome, _, err := hs.claim(ctx, first, ""); err != nil || outcome != claimWon {
		t.Fatalf("first claim: %v %v", outcome, err)
	}
	rs := &releasingSession{Session: claimer, lock: hs.lockPath("tick")}
	cs := NewStore(rs, "/jobs", 10)
	second := &Run{ID: "2-s", Job: "tick", ScheduledAt: time.Now(), Scheduler: "B", Status: StatusRunning}
	outcome, _, err := cs.claim(ctx, second, "")
	if err != nil {
		t.Fatal(err)
	}
	if !rs.released {
		t.Fatal("the lock was never found held: the test did not exercise the race")
	}
	if outcome != claimWon {
		runs, _ := cs.History(ctx, "tick", 10)
		t.Fatalf("claim after the lock was released: outcome %v (history %+v); want it won", outcome, runs)
	}
	l, _, err := cs.readLock(ctx, "tick")
	if err != nil || l.Run != "2-s" || l.Scheduler != "B" {
		t.Fatalf("lock %+v (%v); want run 2-s of scheduler B", l, err)
	}
}
