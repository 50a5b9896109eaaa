package client

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestGroupManualMark: with ManualMark, a message whose loop body returned
// is not committed until the application marks it; Close waits (up to
// rebalance.backoff.ms) for marks of messages handed out, commits exactly the
// marked offset, and marks of a partition not owned are ignored.
func TestGroupManualMark(t *testing.T) {
	cluster, ce := newZKCluster(t)
	cluster.CreateTopic(t, "t", 1)
	produce(t, cluster.Addrs(), "t", 1, 10)
	g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "m", AutoOffsetReset: "smallest",
		DisableAutoCommit: true, ManualMark: true, RebalanceBackoff: 5 * time.Second}, "t", 1)
	ctx := testenv.Context(t, 30*time.Second)
	var late sync.WaitGroup
	for m, err := range streams[0].All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("value-%d", m.Offset); string(m.Value) != want {
			t.Fatalf("offset %d: value %q, want %q", m.Offset, m.Value, want)
		}
		if m.Offset < 4 {
			g.MarkHandled("t", 0, m.Offset+1)
		}
		if m.Offset == 5 {
			if err := g.CommitOffsets(ctx); err != nil {
				t.Fatal(err)
			}
			if got := committedOffset(t, ce, "m", "t", 0); got != 4 {
				t.Fatalf("committed %d with 0..3 marked and 4..5 returned, want 4", got)
			}
			g.MarkHandled("t", 0, 2)   // never backwards
			g.MarkHandled("t", 7, 100) // not owned
			// Marked a while after the body returned, as an acknowledgement
			// arriving late: Close must wait for it.
			late.Add(1)
			time.AfterFunc(200*time.Millisecond, func() { defer late.Done(); g.MarkHandled("t", 0, 6) })
			break
		}
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	late.Wait()
	if got := committedOffset(t, ce, "m", "t", 0); got != 6 {
		t.Fatalf("after Close the registry holds %d, want 6 (the late mark)", got)
	}
}
