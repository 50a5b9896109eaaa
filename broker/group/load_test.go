package group

import (
	"context"
	"testing"
	"time"
)

// TestMarkerWhileLoading: a transaction marker that arrives while its
// offsets partition is still being read back (and that the replay may
// miss) is applied once the load installs the groups, not lost between
// the install and the partition becoming loaded.
func TestMarkerWhileLoading(t *testing.T) {
	log := &memTxnLog{}
	c := newTestCoordinator(t, Config{})
	loaded(t, c, log)
	if code := txnCommit(t, c, 3, "g", 7, "", -1, "in", 0, 10); code != 0 {
		t.Fatalf("TxnOffsetCommit: %d", code)
	}
	c.Unload(0)

	// The next coordinator reads back the open transaction; its COMMIT
	// marker reaches it while it is loading, and is not in what it replays.
	gated := &gatedLog{entered: make(chan struct{}), open: make(chan struct{})}
	_ = gated.Append(log.records)
	c2 := newTestCoordinator(t, Config{})
	c2.Load(0, gated)
	<-gated.entered
	c2.TxnMarker(0, 7, 0, true)
	close(gated.open)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c2.AwaitLoaded(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if o, code := fetchStable(t, c2, "g", "in", 0); o != 10 || code != 0 {
		t.Fatalf("marker sent while loading: offset %d code %d, want 10 and 0", o, code)
	}
}
