package service

import (
	"testing"
	"time"

	"github.com/tributary/tributary/audit/store"
)

func win(start time.Time, last time.Time, rows ...store.Row) store.Window {
	return store.Window{Topic: "t", Start: start, Length: time.Minute, LastUpdate: last, Rows: rows}
}

// TestReportSemantics: a surplus is never a loss; a tier is expected from
// its first window on (a later silent window counts as all missing);
// completeness is null without producer counts; the closing rule follows
// the grace.
func TestReportSemantics(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []store.Window{
		// Window 0: only the producer (the reader starts later).
		win(t0, t0.Add(time.Minute), store.Row{Tier: "producer", Count: 50}),
		// Window 1: a crashed producer never published 10 of its counts.
		win(t0.Add(time.Minute), t0.Add(2*time.Minute), store.Row{Tier: "producer", Count: 90}, store.Row{Tier: "reader", Count: 100}),
		// Window 2: the reader reported nothing.
		win(t0.Add(2*time.Minute), t0.Add(3*time.Minute), store.Row{Tier: "producer", Count: 70}),
		// Window 3: no producer counts at all.
		win(t0.Add(3*time.Minute), t0.Add(4*time.Minute), store.Row{Tier: "reader", Count: 5}),
	}
	first := firstSeen(all)
	r := reporter{grace: 2, now: t0.Add(6 * time.Minute)}
	reps := make([]WindowReport, len(all))
	for i, w := range all {
		reps[i] = r.report(w, first)
	}
	if len(reps[0].Tiers) != 0 || reps[0].Status != StatusComplete {
		t.Errorf("window 0 (before the reader existed): %+v", reps[0])
	}
	if tr := reps[1].Tiers[0]; tr.Surplus != 10 || tr.Missing != 0 || *tr.Completeness < 1.11 || reps[1].Status != StatusComplete {
		t.Errorf("window 1 (surplus): %+v status %s", tr, reps[1].Status)
	}
	if tr := reps[2].Tiers[0]; tr.Count != 0 || tr.Missing != 70 || *tr.Completeness != 0 || reps[2].Status != StatusIncomplete ||
		reps[2].Counts["reader"] != 0 {
		t.Errorf("window 2 (silent reader): %+v status %s counts %v", tr, reps[2].Status, reps[2].Counts)
	}
	// Window 3 ends at t0+4m, last update t0+4m: closes at t0+6m.
	if tr := reps[3].Tiers[0]; tr.Completeness != nil || tr.Surplus != 5 || !reps[3].Closed {
		t.Errorf("window 3 (no producer): %+v closed %v", tr, reps[3].Closed)
	}
	r.now = t0.Add(6*time.Minute - time.Millisecond)
	if rep := r.report(all[3], first); rep.Closed || rep.Status != StatusOpen {
		t.Errorf("window 3 closed before its grace: %+v", rep)
	}
	// A late report re-opens a closed window for another grace.
	late := all[0]
	late.LastUpdate = t0.Add(5 * time.Minute)
	if rep := r.report(late, first); rep.Closed {
		t.Errorf("window with a report at +5m closed at +6m: %+v", rep)
	}
}
