package partlog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// TestDeleteRecordsBefore: the start moves into a segment, reads below it
// fail, whole segments below it go, and the start survives a restart and
// retention; past the end is refused.
func TestDeleteRecordsBefore(t *testing.T) {
	cfg := Config{SegmentBytes: 500, RetentionMs: -1, RetentionBytes: -1}
	l := newLog(t, cfg)
	for i := range 50 {
		mustAppend(t, l, logtest.NewBatch(fmt.Appendf(nil, "v%02d", i)))
	}
	segs := *l.segs.Load()
	if len(segs) < 4 {
		t.Fatalf("only %d segments", len(segs))
	}
	// An offset inside the third segment.
	target := segs[2].base + 1
	if got, err := l.DeleteRecordsBefore(target); err != nil || got != target {
		t.Fatalf("DeleteRecordsBefore(%d): %d, %v", target, got, err)
	}
	if l.StartOffset() != target {
		t.Fatalf("start %d, want %d", l.StartOffset(), target)
	}
	if _, err := l.Read(target-1, 1000); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	if got := readValues(t, l, target); len(got) != 50-int(target) || got[0] != fmt.Sprintf("v%02d", target) {
		t.Fatalf("read from the start: %v", got)
	}
	if now := *l.segs.Load(); now[0].base != segs[2].base {
		t.Fatalf("first segment %d, want the one holding %d (%d)", now[0].base, target, segs[2].base)
	}
	if got, err := l.DeleteRecordsBefore(target - 1); err != nil || got != target {
		t.Fatalf("a lower offset: %d, %v", got, err)
	}
	if _, err := l.DeleteRecordsBefore(51); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := l.ApplyRetention(); err != nil || l.StartOffset() != target {
		t.Fatalf("after retention: start %d, %v", l.StartOffset(), err)
	}
	l = reopen(t, l, cfg)
	if l.StartOffset() != target || l.EndOffset() != 50 {
		t.Fatalf("after reopen: start %d end %d, want %d 50", l.StartOffset(), l.EndOffset(), target)
	}
	// Up to the end: nothing readable, appends go on.
	if got, err := l.DeleteRecordsBefore(50); err != nil || got != 50 {
		t.Fatalf("DeleteRecordsBefore(end): %d, %v", got, err)
	}
	mustAppend(t, l, logtest.NewBatch([]byte("after")))
	if got := readValues(t, l, 50); len(got) != 1 || got[0] != "after" {
		t.Fatalf("after deleting everything: %v", got)
	}
	crash(t, l)
	l = newLog(t, cfg, l.Dir())
	if l.StartOffset() != 50 || l.EndOffset() != 51 {
		t.Fatalf("after a crash: start %d end %d", l.StartOffset(), l.EndOffset())
	}
}
