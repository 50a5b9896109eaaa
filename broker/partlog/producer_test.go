package partlog

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func idem(pid int64, epoch int16, seq int32, values ...string) []byte {
	rs := make([]logtest.Record, len(values))
	for i, v := range values {
		rs[i] = logtest.Record{Value: []byte(v)}
	}
	return logtest.Batch(logtest.Options{Idempotent: true, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, rs...)
}

func TestIdempotentProducer(t *testing.T) {
	l := newLog(t, Config{})
	steps := []struct {
		name      string
		batch     []byte
		err       error
		dup       bool
		base, end int64
	}{
		{"first batch, any sequence", idem(7, 0, 5, "a", "b"), nil, false, 0, 2},
		{"next in order", idem(7, 0, 7, "c"), nil, false, 2, 3},
		{"retry of latest", idem(7, 0, 7, "c"), nil, true, 2, 3},
		{"retry of older", idem(7, 0, 5, "a", "b"), nil, true, 0, 3},
		{"gap", idem(7, 0, 9, "x"), ErrOutOfOrderSequence, false, 0, 3},
		{"overlap", idem(7, 0, 6, "x", "y"), ErrOutOfOrderSequence, false, 0, 3},
		{"other producer", idem(8, 3, 0, "p"), nil, false, 3, 4},
		{"new epoch not at 0", idem(7, 1, 8, "x"), ErrOutOfOrderSequence, false, 0, 4},
		{"new epoch at 0", idem(7, 1, 0, "d"), nil, false, 4, 5},
		{"old epoch", idem(7, 0, 8, "x"), ErrInvalidProducerEpoch, false, 0, 5},
		{"non-idempotent ignored", logtest.NewBatch([]byte("n")), nil, false, 5, 6},
	}
	for _, s := range steps {
		r, err := l.Append(s.batch)
		if !errors.Is(err, s.err) || (err == nil) != (s.err == nil) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.err)
		}
		if err == nil && (r.Duplicate != s.dup || r.BaseOffset != s.base) {
			t.Fatalf("%s: result %+v, want dup=%v base=%d", s.name, r, s.dup, s.base)
		}
		if l.EndOffset() != s.end {
			t.Fatalf("%s: end %d, want %d", s.name, l.EndOffset(), s.end)
		}
	}
	// Only the last five batches are remembered.
	for i := int32(1); i <= 5; i++ {
		mustAppend(t, l, idem(7, 1, i, "e"))
	}
	if _, err := l.Append(idem(7, 1, 0, "d")); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry beyond the window: %v", err)
	}
	if got := readValues(t, l, 0); !equalStrings(got, []string{"a", "b", "c", "p", "d", "n", "e", "e", "e", "e", "e"}) {
		t.Fatalf("log holds %q", got)
	}
}

func TestSequenceWraps(t *testing.T) {
	if got := incSeq(math.MaxInt32, 1); got != 0 {
		t.Fatalf("incSeq(max, 1) = %d", got)
	}
	if got := incSeq(math.MaxInt32-1, 3); got != 1 {
		t.Fatalf("incSeq(max-1, 3) = %d", got)
	}
	l := newLog(t, Config{})
	mustAppend(t, l, idem(1, 0, math.MaxInt32-1, "a", "b"))
	if r := mustAppend(t, l, idem(1, 0, 0, "c")); r.BaseOffset != 2 {
		t.Fatalf("after wrap: %+v", r)
	}
}

func TestProducerStateSurvivesRestart(t *testing.T) {
	cfg := Config{SegmentBytes: 400}
	l := newLog(t, cfg)
	for i := int32(0); i < 20; i++ {
		mustAppend(t, l, idem(42, 2, i, "v"))
	}
	check := func(l *Log, how string) {
		t.Helper()
		if r, err := l.Append(idem(42, 2, 19, "v")); err != nil || !r.Duplicate || r.BaseOffset != 19 {
			t.Fatalf("%s: retry of last batch: %+v %v", how, r, err)
		}
		if _, err := l.Append(idem(42, 2, 25, "v")); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("%s: gap accepted: %v", how, err)
		}
		if _, err := l.Append(idem(42, 1, 0, "v")); !errors.Is(err, ErrInvalidProducerEpoch) {
			t.Fatalf("%s: old epoch accepted: %v", how, err)
		}
	}
	l = reopen(t, l, cfg)
	check(l, "clean restart")
	// Unclean: no marker, state from the roll snapshot plus a header scan.
	mustAppend(t, l, idem(42, 2, 20, "v"))
	crash(t, l)
	l = newLog(t, cfg, l.Dir())
	if r, err := l.Append(idem(42, 2, 20, "v")); err != nil || !r.Duplicate || r.BaseOffset != 20 {
		t.Fatalf("after crash: retry of last batch: %+v %v", r, err)
	}
}

// TestProducerStateWithoutSnapshotAfterRoll: a crash right after the first
// roll, before its background snapshot was written, leaves no snapshot and
// an active segment holding one batch. The producer's earlier batches are in
// the previous segment, and retries of them must still be recognized (one
// failed TestCrashRecovery run appended a retry as new records, a
// duplicate in the log).
func TestProducerStateWithoutSnapshotAfterRoll(t *testing.T) {
	cfg := Config{SegmentBytes: 400}
	l := newLog(t, cfg)
	var seq int32
	for len(*l.segs.Load()) < 2 {
		mustAppend(t, l, idem(42, 0, seq, "v"))
		seq++
	}
	last := seq - 1 // the batch that rolled, alone in the active segment
	crash(t, l)
	snaps, err := filepath.Glob(filepath.Join(l.Dir(), "*"+snapshotSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	l = newLog(t, cfg, l.Dir())
	for s := max(last-producerWindow+1, 0); s <= last; s++ {
		if r, err := l.Append(idem(42, 0, s, "v")); err != nil || !r.Duplicate || r.BaseOffset != int64(s) {
			t.Fatalf("retry of batch %d (last %d): %+v %v; want a duplicate at %d", s, last, r, err, s)
		}
	}
	if r := mustAppend(t, l, idem(42, 0, last+1, "v")); r.Duplicate || r.BaseOffset != int64(last+1) {
		t.Fatalf("next batch: %+v", r)
	}
}
