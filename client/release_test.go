package client

import (
	"io"
	"log/slog"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestCloseDuringRebalanceIsQuiet: a Close that cuts a rebalance short
// (the mirror's sources leaving one group at shutdown) cancels the
// rebalance's release of the partitions. That is no warning: the closed
// session removes the owner nodes. `pipeline up` printed one WARN
// "releasing partition failed ... context canceled" per partition at every
// Ctrl-C.
func TestCloseDuringRebalanceIsQuiet(t *testing.T) {
	cluster, ce := brokertest.New(t), newMemCoord(t)
	cluster.CreateTopic(t, "t", 4)
	produce(t, cluster.Addrs(), "t", 4, 8)
	ctx := testenv.Context(t, time.Minute)
	// The registry decides the partitions (TestGroupTopicRegistry): two now,
	// four below, which rebalances.
	path := coord.Join(brokerTopicsPath, "t")
	if _, err := ce.admin.CreateAll(ctx, path, []byte(`{"version":1,"partitions":{"0":[1],"1":[1]}}`), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	var logs testproc.SyncBuffer
	// With ManualMark, a message handed out and not marked holds the
	// rebalance in waitInflight for RebalanceBackoff: the window for Close.
	g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "q", ConsumerID: "a", AutoOffsetReset: "smallest",
		ManualMark: true, DisableAutoCommit: true, RebalanceBackoff: 3 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testenv.LogWriter(t)), &slog.HandlerOptions{Level: slog.LevelDebug}))},
		"t", 1)
	if got := g.Owned()["t"]; !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("owns %v of a 2-partition registry", got)
	}
	for _, err := range streams[0].All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		break // handed out, never marked
	}
	if _, err := ce.admin.Set(ctx, path, []byte(`{"version":1,"partitions":{"0":[1],"1":[1],"2":[1],"3":[1]}}`), coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "the rebalance to stop fetching", func() (bool, string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.fetch == nil, "still fetching"
	})
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}

	out := logs.String()
	// The rebalance's release was cut short (the case under test) ...
	for _, p := range []int32{0, 1} {
		cut := regexp.MustCompile(`level=DEBUG msg="releasing partition failed" .*path=` + regexp.QuoteMeta(ownerPath("q", "t", p)) + ` err="context canceled"`)
		if !cut.MatchString(out) {
			t.Errorf("no debug line for the canceled release of partition %d:\n%s", p, out)
		}
	}
	// ... and said nothing louder.
	if warn := regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`).FindAllString(out, -1); len(warn) > 0 {
		t.Errorf("Close during a rebalance logged:\n%s", warn)
	}
	// The owner nodes went with the session.
	for p := range int32(4) {
		if ok, _, err := ce.admin.Exists(ctx, ownerPath("q", "t", p)); err != nil || ok {
			t.Errorf("owner node of partition %d after Close: exists %v, err %v", p, ok, err)
		}
	}
}
