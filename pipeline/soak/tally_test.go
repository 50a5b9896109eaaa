package soak

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// TestTallyCompare: each kind of discrepancy is counted and named, and
// duplicates are a problem only where they are not allowed.
func TestTallyCompare(t *testing.T) {
	reports := []pipeline.ProducerStats{
		{Producer: "dc1-a", Sent: 10, Acked: 9, Failed: 1, FailedSeqs: []int64{7}},
		{Producer: "dc2-b", Sent: 3, Acked: 3},
	}
	tl := newTally()
	for seq := int64(0); seq < 10; seq++ {
		if seq != 4 { // acknowledged, missing
			tl.add("dc1-a", seq)
		}
	}
	tl.add("dc1-a", 2)  // twice
	tl.add("dc1-a", 12) // never sent
	for seq := int64(0); seq < 3; seq++ {
		tl.add("dc2-b", seq)
	}
	tl.add("dc3-x", 0) // unknown producer
	c := tl.compare(reports, false)
	want := comparison{acked: 12, once: 10, present: 11, twice: 1, missing: 1, failedIn: 1, neverSent: 2}
	got := c
	got.problems = nil
	if got.acked != want.acked || got.once != want.once || got.present != want.present || got.twice != want.twice ||
		got.missing != want.missing || got.failedIn != want.failedIn || got.neverSent != want.neverSent {
		t.Errorf("compare = %+v, want %+v", got, want)
	}
	all := strings.Join(c.problems, "\n")
	for _, s := range []string{"dc1-a: acknowledged records missing (first seqs [4])", "dc1-a: records seen more than once (first seqs [2])",
		"unknown producers dc3-x", "2 records never sent"} {
		if !strings.Contains(all, s) {
			t.Errorf("problems lack %q:\n%s", s, all)
		}
	}
	if c := tl.compare(reports, true); strings.Contains(strings.Join(c.problems, "\n"), "more than once") {
		t.Errorf("duplicates allowed but reported: %v", c.problems)
	}
}

// TestExpectChecksContent: a record whose fields are not its producer's
// for its seq is named.
func TestExpectChecksContent(t *testing.T) {
	tl := newTally()
	expect(tl, "f", "dc1", "dc1-a", 3, "user-"+"757", "/profile", true)
	if len(tl.bad) != 0 {
		t.Fatalf("a correct record flagged: %v", tl.bad)
	}
	expect(tl, "f", "dc1", "dc1-a", 3, "user-1", "/profile", true)
	expect(tl, "f", "dc2", "dc1-a", 3, "user-757", "/profile", true)
	if len(tl.bad) != 2 || !strings.Contains(tl.bad[0], "dc1-a/3 is not the record its producer sent") {
		t.Errorf("bad = %v, want two records named", tl.bad)
	}
}

// TestAuditWindows: complete needs the mirror at least and the loader
// exactly at the producers' count; a short mirror tier alone is told
// apart.
func TestAuditWindows(t *testing.T) {
	ws := []window{
		{Topic: "t", Closed: true, Producer: 10, Counts: map[string]int64{"mirror": 12, "loader": 10}},
		{Topic: "t", Closed: true, Producer: 10, Counts: map[string]int64{"mirror": 9, "loader": 10}},
		{Topic: "t", Closed: true, Producer: 10, Counts: map[string]int64{"mirror": 10, "loader": 11}},
		{Topic: "t", Closed: false, Producer: 10, Counts: map[string]int64{"mirror": 1}},
	}
	closed, complete, bad, open := auditTally(ws)
	if closed != 3 || complete != 1 || open != 1 || len(bad) != 2 {
		t.Fatalf("auditTally = %d closed, %d complete, %v bad, %d open", closed, complete, bad, open)
	}
	if !bad[0].mirrorUndercount() || bad[1].mirrorUndercount() {
		t.Errorf("mirror under-count: %v %v, want true false", bad[0].mirrorUndercount(), bad[1].mirrorUndercount())
	}
}
