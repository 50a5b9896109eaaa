package partlog

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// fakeClock is a Config.Now that tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestRetentionBySize(t *testing.T) {
	cfg := Config{SegmentBytes: 500, RetentionBytes: 1200, RetentionMs: -1}
	l := newLog(t, cfg)
	for i := range 50 {
		mustAppend(t, l, logtest.NewBatch(fmt.Appendf(nil, "v%02d", i)))
	}
	segsBefore := len(*l.segs.Load())
	// A reader holding a View of the first segment keeps it readable.
	v, err := l.Read(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("ApplyRetention: %d, %v", n, err)
	}
	segs := *l.segs.Load()
	if len(segs) != segsBefore-n || l.StartOffset() != segs[0].base || l.StartOffset() == 0 {
		t.Fatalf("segments %d->%d, start %d", segsBefore, len(segs), l.StartOffset())
	}
	if l.Size() > 1200+500 || l.Size() < 1200-500 {
		t.Fatalf("size %d after retention to 1200", l.Size())
	}
	if _, err := os.Stat(segmentPath(l.Dir(), 0, logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("first segment file still there: %v", err)
	}
	b, err := v.Bytes()
	v.Release()
	if err != nil {
		t.Fatalf("held view after deletion: %v", err)
	}
	if _, vs := logtest.Values(b); string(vs[0]) != "v00" {
		t.Fatalf("held view reads %q", vs[0])
	}
	if _, err := l.Read(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below new start: %v", err)
	}
	got := readValues(t, l, l.StartOffset())
	if got[0] != fmt.Sprintf("v%02d", l.StartOffset()) || got[len(got)-1] != "v49" {
		t.Fatalf("remaining values %q", got)
	}
	start := l.StartOffset()
	l = reopen(t, l, cfg)
	if l.StartOffset() != start {
		t.Fatalf("start %d after reopen, want %d", l.StartOffset(), start)
	}
}

func TestRetentionByTime(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	cfg := Config{SegmentBytes: 300, RetentionMs: time.Hour, Now: clock.now}
	l := newLog(t, cfg)
	for i := range 30 {
		ts := int64(1_000_000 + i*60_000) // one minute apart
		mustAppend(t, l, logtest.Batch(logtest.Options{Timestamp: ts}, logtest.Record{Value: []byte("x")}))
	}
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("nothing old yet: %d, %v", n, err)
	}
	clock.t = time.UnixMilli(1_000_000 + 3600_000 + 10*60_000 + 1) // batches 0..10 expired
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("ApplyRetention: %d %v", n, err)
	}
	for _, s := range *l.segs.Load() {
		if ts, _ := s.largestTimestamp(); clock.t.UnixMilli()-ts > time.Hour.Milliseconds() {
			t.Fatalf("expired segment %d (max ts %d) kept", s.base, ts)
		}
	}
	if l.StartOffset() > 11 || l.StartOffset() < 5 {
		t.Fatalf("start %d", l.StartOffset())
	}
	// The active segment is never deleted, even when everything expired.
	clock.t = clock.t.Add(24 * time.Hour)
	l.ApplyRetention()
	if segs := *l.segs.Load(); len(segs) != 1 || l.EndOffset() != 30 {
		t.Fatalf("%d segments, end %d", len(segs), l.EndOffset())
	}
}

func TestRollByTime(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	l := newLog(t, Config{SegmentMs: time.Minute, Now: clock.now})
	mustAppend(t, l, logtest.NewBatch([]byte("a")))
	mustAppend(t, l, logtest.NewBatch([]byte("b")))
	clock.t = clock.t.Add(time.Minute)
	mustAppend(t, l, logtest.NewBatch([]byte("c")))
	segs := *l.segs.Load()
	if len(segs) != 2 || segs[1].base != 2 {
		t.Fatalf("segments %d, want a roll at offset 2", len(segs))
	}
}
