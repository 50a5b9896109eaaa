package partlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// epochBatch is a non-idempotent batch of the values stamped with a
// partition leader epoch (header bytes 12..15, outside the CRC), as a
// leader stamps produced batches.
func epochBatch(epoch int32, ts int64, values ...string) []byte {
	rs := make([]logtest.Record, len(values))
	for i, v := range values {
		rs[i] = logtest.Record{Value: []byte(v)}
	}
	return stamp(logtest.Batch(logtest.Options{Timestamp: ts}, rs...), epoch)
}

func stamp(b []byte, epoch int32) []byte {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	return b
}

func readCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		t.Fatalf("read checkpoint: %v", err)
	}
	return string(b)
}

func wantEpochs(t *testing.T, l *Log, want []epochEntry) {
	t.Helper()
	if got := l.epochs.snapshot(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("epoch cache %v, want %v", got, want)
	}
	latest := int32(-1)
	if len(want) > 0 {
		latest = want[len(want)-1].epoch
	}
	if got := l.LatestEpoch(); got != latest {
		t.Fatalf("LatestEpoch %d, want %d", got, latest)
	}
	if got, exp := readCheckpoint(t, l.Dir()), string(encodeEpochCheckpoint(want)); got != exp {
		t.Fatalf("checkpoint file %q, want %q", got, exp)
	}
}

func TestEpochCacheFollowsAppends(t *testing.T) {
	cfg := Config{SegmentBytes: 300, IndexIntervalBytes: 100}
	l := newLog(t, cfg)
	wantEpochs(t, l, nil)
	if got := readCheckpoint(t, l.Dir()); got != "0\n0\n" {
		t.Fatalf("empty log's checkpoint %q", got)
	}
	// Epochs -1 (unstamped), 0, 0, 2, 2 (in a two-batch append), 5, then a
	// stale 3, which starts nothing.
	mustAppend(t, l, epochBatch(-1, 1, "a", "b")) // 0-1
	mustAppend(t, l, epochBatch(0, 2, "c"))       // 2
	mustAppend(t, l, epochBatch(0, 3, "d", "e"))  // 3-4
	two := append(epochBatch(0, 4, "f"), epochBatch(2, 5, "g", "h")...)
	mustAppend(t, l, two)                        // 5, 6-7
	mustAppend(t, l, epochBatch(2, 6, "i"))      // 8
	mustAppend(t, l, epochBatch(5, 7, "j", "k")) // 9-10
	mustAppend(t, l, epochBatch(3, 8, "l"))      // 11
	want := []epochEntry{{0, 2}, {2, 6}, {5, 9}}
	wantEpochs(t, l, want)
	if got := readCheckpoint(t, l.Dir()); got != "0\n3\n0 2\n2 6\n5 9\n" {
		t.Fatalf("checkpoint bytes %q", got)
	}
	if len(*l.segs.Load()) < 3 {
		t.Fatalf("want several segments, have %d", len(*l.segs.Load()))
	}

	l = reopen(t, l, cfg)
	wantEpochs(t, l, want)

	// A crash (no Close) keeps it too.
	dir := l.Dir()
	crash(t, l)
	l = newLog(t, cfg, dir)
	wantEpochs(t, l, want)

	// Missing or unreadable checkpoints are rebuilt from the batches.
	for _, content := range []string{"", "0\n2\n0 2\n", "1\n1\n0 2\n", "0\n2\n2 6\n0 2\n", "garbage"} {
		path := filepath.Join(dir, epochCheckpointFile)
		if content == "" {
			os.Remove(path)
		} else if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		l = reopen(t, l, cfg)
		wantEpochs(t, l, want)
	}

	// New epochs after reopen continue the cache.
	mustAppend(t, l, epochBatch(7, 9, "m"))
	want = append(want, epochEntry{7, 12})
	wantEpochs(t, l, want)
}

// A checkpoint written ahead of the data (the crash window between the
// checkpoint and the segment write) is cut back to the log at Open, and an
// unsynced tail's epochs are found again by recovery.
func TestEpochCheckpointAheadOfLog(t *testing.T) {
	cfg := Config{}
	l := newLog(t, cfg)
	mustAppend(t, l, epochBatch(1, 1, "a", "b"))
	mustAppend(t, l, epochBatch(4, 1, "c"))
	dir := l.Dir()
	crash(t, l)
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), []byte("0\n3\n1 0\n4 2\n9 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = newLog(t, cfg, dir)
	wantEpochs(t, l, []epochEntry{{1, 0}, {4, 2}})

	// The checkpoint lost the last epoch; recovery rescans the tail.
	crash(t, l)
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), []byte("0\n1\n1 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = newLog(t, cfg, dir)
	wantEpochs(t, l, []epochEntry{{1, 0}, {4, 2}})
}

func TestEndOffsetForEpoch(t *testing.T) {
	l := newLog(t, Config{})
	if e, o := l.EndOffsetForEpoch(0); e != -1 || o != -1 {
		t.Fatalf("empty cache: (%d, %d)", e, o)
	}
	// Epochs 1 at 0, 3 at 10, 4 at 20; end offset 30.
	for _, ep := range []int32{1, 3, 4} {
		for range 2 {
			mustAppend(t, l, epochBatch(ep, 1, "v", "v", "v", "v", "v"))
		}
	}
	cases := []struct {
		requested int32
		epoch     int32
		offset    int64
	}{
		{4, 4, 30},   // latest: the log end offset
		{3, 3, 20},   // cached: start of the next epoch
		{1, 1, 10},   // first cached
		{2, 1, 10},   // not cached: largest epoch below, start of the first above
		{0, -1, -1},  // below the first cached epoch
		{-1, -1, -1}, // undefined
		{5, -1, -1},  // above the latest
	}
	for _, c := range cases {
		if e, o := l.EndOffsetForEpoch(c.requested); e != c.epoch || o != c.offset {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.requested, e, o, c.epoch, c.offset)
		}
	}
	// The latest epoch follows the end offset.
	mustAppend(t, l, epochBatch(4, 1, "w"))
	if e, o := l.EndOffsetForEpoch(4); e != 4 || o != 31 {
		t.Fatalf("after append: (%d, %d)", e, o)
	}
	// After a truncation into epoch 3, 3 is the latest again.
	if err := l.TruncateTo(15); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 15 {
		t.Fatalf("after truncation: EndOffsetForEpoch(3) = (%d, %d)", e, o)
	}
	if e, o := l.EndOffsetForEpoch(4); e != -1 || o != -1 {
		t.Fatalf("after truncation: EndOffsetForEpoch(4) = (%d, %d)", e, o)
	}
}

func TestEpochCacheTruncateFromStart(t *testing.T) {
	c := &epochCache{entries: []epochEntry{{1, 0}, {3, 10}, {4, 20}}}
	for _, tc := range []struct {
		start int64
		want  []epochEntry
	}{
		{0, []epochEntry{{1, 0}, {3, 10}, {4, 20}}},
		{5, []epochEntry{{1, 5}, {3, 10}, {4, 20}}},
		{10, []epochEntry{{3, 10}, {4, 20}}},
		{25, []epochEntry{{4, 25}}},
	} {
		c.truncateFromStart(tc.start)
		if !reflect.DeepEqual(c.entries, tc.want) {
			t.Fatalf("truncateFromStart(%d): %v, want %v", tc.start, c.entries, tc.want)
		}
	}

	// Retention does the same to a Log's cache.
	now := time.Unix(1000, 0)
	cfg := Config{SegmentBytes: 200, RetentionBytes: 1, Now: func() time.Time { return now }}
	l := newLog(t, cfg)
	for i := range 6 {
		mustAppend(t, l, epochBatch(int32(i/2), 1, fmt.Sprintf("value-%d", i)))
	}
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	var want []epochEntry
	for ep := int32(0); ep < 3; ep++ {
		s := int64(ep) * 2
		if s+2 <= start { // wholly below the start
			continue
		}
		want = append(want, epochEntry{ep, max(s, start)})
	}
	wantEpochs(t, l, want)
}
