package partlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var truncCfg = Config{SegmentBytes: 700, IndexIntervalBytes: 150, RetentionMs: -1}

type builtBatch struct {
	base, last int64
	epoch      int32
	values     []string
	size       int64
}

// buildTruncLog appends 30 batches of 1..3 records whose values name their
// batch ("v007-1"), epochs rising every 6 batches.
func buildTruncLog(t *testing.T, dir string) (*Log, []builtBatch) {
	t.Helper()
	l := newLog(t, truncCfg, dir)
	var bs []builtBatch
	for i := range 30 {
		vs := make([]string, 1+i%3)
		for j := range vs {
			vs[j] = fmt.Sprintf("v%03d-%d%s", i, j, strings.Repeat("#", i*11%40))
		}
		ep := int32(i / 6)
		b := epochBatch(ep, int64(100+i), vs...)
		r := mustAppend(t, l, b)
		bs = append(bs, builtBatch{r.BaseOffset, r.LastOffset, ep, vs, int64(len(b))})
	}
	return l, bs
}

// checkTruncated verifies that l holds exactly the batches of bs below p:
// offsets, values, epochs, and that no file in its directory holds a byte
// of a dropped record.
func checkTruncated(t *testing.T, l *Log, bs []builtBatch, p int64, extra []string) {
	t.Helper()
	settle(l)
	var want []string
	var wantEpochs []epochEntry
	var keptBytes int64
	for _, b := range bs {
		if b.base >= p {
			continue
		}
		want = append(want, b.values...)
		keptBytes += b.size
		if n := len(wantEpochs); n == 0 || wantEpochs[n-1].epoch < b.epoch {
			wantEpochs = append(wantEpochs, epochEntry{b.epoch, b.base})
		}
	}
	want = append(want, extra...)
	if got := readValues(t, l, l.StartOffset()); !equalStrings(got, want) {
		t.Fatalf("after truncation to %d the log holds %q, want %q", p, got, want)
	}
	if extra == nil {
		if l.EndOffset() != p {
			t.Fatalf("end offset %d, want %d", l.EndOffset(), p)
		}
		if v, err := l.Read(p, 1<<20); err != nil || v.Len() != 0 {
			t.Fatalf("Read at the cut: %v, %v", v, err)
		}
		var logBytes int64
		for _, s := range *l.segs.Load() {
			logBytes += s.size.Load()
		}
		if logBytes != keptBytes {
			t.Fatalf("segments hold %d bytes, kept batches %d", logBytes, keptBytes)
		}
		wantEpochsOf(t, l, wantEpochs)
	}
	files := dirFiles(t, l.Dir())
	for _, b := range bs {
		if b.base < p {
			continue
		}
		for name, content := range files {
			if bytes.Contains(content, []byte(b.values[0])) {
				t.Fatalf("file %s still holds %q, dropped by the truncation to %d", name, b.values[0], p)
			}
		}
	}
	var onDisk int64
	for name, content := range files {
		if strings.HasSuffix(name, logSuffix) {
			onDisk += int64(len(content))
		}
	}
	if extra == nil && onDisk != keptBytes {
		t.Fatalf(".log files hold %d bytes, kept batches %d", onDisk, keptBytes)
	}
}

func wantEpochsOf(t *testing.T, l *Log, want []epochEntry) {
	t.Helper()
	if got := l.epochs.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("epoch cache %v, want %v", got, want)
	}
	if got := readCheckpoint(t, l.Dir()); got != string(encodeEpochCheckpoint(want)) {
		t.Fatalf("checkpoint %q, want %q", got, encodeEpochCheckpoint(want))
	}
}

func TestTruncateTo(t *testing.T) {
	_, bs := buildTruncLog(t, t.TempDir())
	probe, _ := buildTruncLog(t, t.TempDir())
	segs := *probe.segs.Load()
	if len(segs) < 4 {
		t.Fatalf("want at least 4 segments, have %d", len(segs))
	}
	inSegment := func(s *segment, next int64) int64 { // a batch boundary strictly inside s
		for _, b := range bs {
			if b.base > s.base && b.base < next {
				return b.base
			}
		}
		t.Fatalf("segment %d has a single batch", s.base)
		return 0
	}
	end := probe.EndOffset()
	points := map[string]int64{
		"everything":              0,
		"second segment base":     segs[1].base,
		"inside a sealed segment": inSegment(segs[1], segs[2].base),
		"active segment base":     segs[len(segs)-1].base,
		"inside active segment":   inSegment(segs[len(segs)-1], end),
		"last batch":              bs[len(bs)-1].base,
		"end (nothing to do)":     end,
	}
	for name, p := range points {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := buildTruncLog(t, dir)
			l = reopen(t, l, truncCfg) // the recovery point comes from a clean Close
			// A View taken before: after the cut it reads the old bytes or
			// fails, never other bytes.
			vOff := min(p, end-1)
			old, err := l.Read(vOff, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Release()
			oldBytes, err := old.Bytes()
			if err != nil {
				t.Fatal(err)
			}

			if err := l.TruncateTo(p); err != nil {
				t.Fatalf("TruncateTo(%d): %v", p, err)
			}
			checkTruncated(t, l, bs, p, nil)
			if rp := readRecoveryPoint(dir); rp > p {
				t.Fatalf("recovery point %d left above the cut %d", rp, p)
			}
			if again, err := old.Bytes(); err == nil && !bytes.Equal(again, oldBytes) {
				t.Fatalf("a View taken before the truncation returns other bytes")
			}
			var sink bytes.Buffer
			if _, err := old.WriteTo(&sink); err == nil && !bytes.Equal(sink.Bytes(), oldBytes) {
				t.Fatalf("a View taken before the truncation sends other bytes")
			}

			// Crash right after: the cut holds.
			crash(t, l)
			l = newLog(t, truncCfg, dir)
			checkTruncated(t, l, bs, p, nil)

			// Append past the cut, crash, reopen: old prefix plus the new.
			var extra []string
			for i := range 4 {
				v := fmt.Sprintf("new-%d", i)
				mustAppend(t, l, epochBatch(9, 1, v))
				extra = append(extra, v)
			}
			if again, err := old.Bytes(); err == nil && !bytes.Equal(again, oldBytes) {
				t.Fatalf("a View taken before the truncation returns new bytes")
			}
			crash(t, l)
			l = newLog(t, truncCfg, dir)
			checkTruncated(t, l, bs, p, extra)
			if l.LatestEpoch() != 9 {
				t.Fatalf("latest epoch %d after re-append", l.LatestEpoch())
			}
		})
	}
}

func TestTruncateToRejects(t *testing.T) {
	l, bs := buildTruncLog(t, t.TempDir())
	end := l.EndOffset()
	var inside int64 = -1
	for _, b := range bs {
		if b.last > b.base {
			inside = b.base + 1
			break
		}
	}
	for _, c := range []struct {
		offset int64
		err    error
	}{
		{inside, ErrNotBatchBoundary},
		{end + 1, ErrOffsetOutOfRange},
		{-1, ErrOffsetOutOfRange},
	} {
		if err := l.TruncateTo(c.offset); !errors.Is(err, c.err) {
			t.Fatalf("TruncateTo(%d): %v, want %v", c.offset, err, c.err)
		}
		if l.EndOffset() != end {
			t.Fatalf("TruncateTo(%d) failed but moved the end to %d", c.offset, l.EndOffset())
		}
	}
	checkTruncated(t, l, bs, end, nil)

	// Below the log start after retention.
	l.cfg.RetentionBytes = 1
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if start := l.StartOffset(); start == 0 {
		t.Fatal("retention deleted nothing")
	} else if err := l.TruncateTo(start - 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("TruncateTo below start: %v", err)
	} else if err := l.TruncateTo(start); err != nil {
		t.Fatalf("TruncateTo(start): %v", err)
	} else if l.EndOffset() != start || l.StartOffset() != start {
		t.Fatalf("after truncating to the start: [%d, %d)", l.StartOffset(), l.EndOffset())
	}
}

// After a truncation the producer state is that of the kept batches: a
// retry of a dropped batch is appended again, a retry of a kept one is
// still a duplicate, also after a crash, and also when the cut lies below
// every snapshot.
func TestTruncateProducerState(t *testing.T) {
	cfg := Config{SegmentBytes: 400, RetentionMs: -1}
	batch := func(i int) []byte {
		return idem(7, 0, int32(2*i), fmt.Sprintf("p%02d-a", i), fmt.Sprintf("p%02d-b", i))
	}
	for _, tc := range []struct {
		name  string
		cut   int // first dropped batch
		crash bool
	}{
		{"near the end", 15, false},
		{"near the end, crash", 15, true},
		{"below every snapshot", 3, false},
		{"below every snapshot, crash", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t, cfg)
			dir := l.Dir()
			for i := range 20 {
				mustAppend(t, l, batch(i))
			}
			settle(l)
			p := int64(2 * tc.cut)
			names, _ := listDirNames(dir)
			if snaps := listOffsetFiles(names, snapshotSuffix); len(snaps) == 0 || snaps[len(snaps)-1] <= p {
				t.Fatalf("want a snapshot past the cut, have %v", snaps)
			}
			if err := l.TruncateTo(p); err != nil {
				t.Fatal(err)
			}
			names, _ = listDirNames(dir)
			for _, s := range listOffsetFiles(names, snapshotSuffix) {
				if s > p {
					t.Fatalf("snapshot %d past the cut %d survived", s, p)
				}
			}
			if tc.crash {
				crash(t, l)
				l = newLog(t, cfg, dir)
			}
			// The last kept batch: still a duplicate, at its offsets.
			if r, err := l.Append(batch(tc.cut - 1)); err != nil || !r.Duplicate || r.BaseOffset != p-2 {
				t.Fatalf("retry of kept batch %d: %+v, %v", tc.cut-1, r, err)
			}
			// The first dropped batch: appended again.
			if r, err := l.Append(batch(tc.cut)); err != nil || r.Duplicate || r.BaseOffset != p {
				t.Fatalf("retry of dropped batch %d: %+v, %v", tc.cut, r, err)
			}
			if r, err := l.Append(batch(tc.cut)); err != nil || !r.Duplicate || r.BaseOffset != p {
				t.Fatalf("second retry of batch %d: %+v, %v", tc.cut, r, err)
			}
			if _, err := l.Append(batch(tc.cut + 2)); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("skipping batch %d: %v", tc.cut+1, err)
			}
		})
	}
}

func TestReadBelow(t *testing.T) {
	l := newLog(t, Config{IndexIntervalBytes: 100})
	// Batches of 3 records: 0-2, 3-5, ..., 27-29.
	var sizes []int64
	for i := range 10 {
		b := epochBatch(1, 1, fmt.Sprintf("r%d-0", i), fmt.Sprintf("r%d-1", i), fmt.Sprintf("r%d-2", i))
		sizes = append(sizes, int64(len(b)))
		mustAppend(t, l, b)
	}
	batchesBelow := func(offset int64, maxBytes int, limit int64) []string {
		t.Helper()
		v, err := l.ReadBelow(offset, maxBytes, limit)
		if err != nil {
			t.Fatalf("ReadBelow(%d, %d, %d): %v", offset, maxBytes, limit, err)
		}
		defer v.Release()
		b, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		var firsts []string
		for _, bb := range splitBatches(t, b) {
			h := parseHeader(bb)
			firsts = append(firsts, fmt.Sprintf("%d-%d", h.baseOffset, h.lastOffset()))
		}
		return firsts
	}
	for _, c := range []struct {
		offset   int64
		maxBytes int
		limit    int64
		want     string
	}{
		{0, 1 << 20, 0, "[]"},
		{0, 1 << 20, 2, "[]"}, // the first batch ends at the limit
		{0, 1 << 20, 3, "[0-2]"},
		{0, 1 << 20, 5, "[0-2]"},
		{0, 1 << 20, 6, "[0-2 3-5]"},
		{4, 1 << 20, 12, "[3-5 6-8 9-11]"},
		{4, 1 << 20, 4, "[]"}, // offset == limit: empty, no error
		{4, 1 << 20, 2, "[]"},
		{0, 1, 30, "[0-2]"}, // maxBytes still gives at least one batch
		{0, int(sizes[0] + sizes[1]), 30, "[0-2 3-5]"},
		{0, 1 << 20, 30, "[0-2 3-5 6-8 9-11 12-14 15-17 18-20 21-23 24-26 27-29]"},
		{0, 1 << 20, 1000, "[0-2 3-5 6-8 9-11 12-14 15-17 18-20 21-23 24-26 27-29]"},
		{28, 1 << 20, 1000, "[27-29]"},
		{30, 1 << 20, 1000, "[]"},
		{20, 1 << 20, 27, "[18-20 21-23 24-26]"},
	} {
		if got := fmt.Sprint(batchesBelow(c.offset, c.maxBytes, c.limit)); got != c.want {
			t.Errorf("ReadBelow(%d, %d, %d) = %s, want %s", c.offset, c.maxBytes, c.limit, got, c.want)
		}
	}
	// Below the log start: an error, as Read gives.
	l.cfg.RetentionBytes = 1
	l.cfg.SegmentBytes = 1
	mustAppend(t, l, epochBatch(1, 1, "x")) // rolls
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadBelow(0, 100, 0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadBelow below the start: %v", err)
	}
}

// Readers (Read, ReadBelow, EndOffsetForEpoch, Views held across the cut)
// run while one goroutine appends and truncates. Run with -race.
func TestTruncateConcurrentReaders(t *testing.T) {
	l := newLog(t, Config{SegmentBytes: 2000, IndexIntervalBytes: 200, RetentionMs: -1})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, failedOld, cutsStarted, cutsDone atomic.Int64
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []*View
			for i := 0; ; i++ {
				select {
				case <-stop:
					for _, v := range held {
						v.Release()
					}
					return
				default:
				}
				end := l.EndOffset()
				off := int64(0)
				if end > 0 {
					off = int64(i*7+r) % end
				}
				var v *View
				var err error
				// A view is strict only if no truncation ran at any time
				// between the Read and the use of its bytes.
				done0, started0 := cutsDone.Load(), cutsStarted.Load()
				if i%2 == 0 {
					v, err = l.Read(off, 3000)
				} else {
					v, err = l.ReadBelow(off, 3000, end)
				}
				if err != nil {
					t.Errorf("read at %d: %v", off, err)
					return
				}
				if b, err := v.Bytes(); err != nil {
					if done0 == started0 && cutsStarted.Load() == started0 { // else the view predates a cut and may fail
						t.Errorf("fresh view: %v", err)
						return
					}
				} else if len(b) > 0 {
					if _, _, err := ValidateBatch(b); err != nil {
						t.Errorf("fresh view holds bad bytes: %v", err)
						return
					}
				}
				reads.Add(1)
				l.EndOffsetForEpoch(int32(i % 5))
				held = append(held, v)
				if len(held) > 8 { // an old view, perhaps cut under it
					old := held[0]
					held = held[1:]
					if b, err := old.Bytes(); err != nil {
						failedOld.Add(1)
					} else if len(b) > 0 {
						if _, _, err := ValidateBatch(b); err != nil {
							t.Errorf("old view holds bad bytes: %v", err)
						}
					}
					old.Release()
				}
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	var truncs int
	for i := 0; time.Now().Before(deadline); i++ {
		ep := int32(i / 20)
		r := mustAppend(t, l, epochBatch(ep, int64(i), fmt.Sprintf("c%d-0", i), fmt.Sprintf("c%d-1", i)))
		if i%15 == 14 {
			cutsStarted.Add(1)
			if err := l.TruncateTo(r.BaseOffset - 4); err != nil { // two batches back
				t.Fatalf("TruncateTo: %v", err)
			}
			cutsDone.Add(1)
			truncs++
		}
	}
	close(stop)
	wg.Wait()
	if truncs == 0 || reads.Load() == 0 {
		t.Fatalf("%d truncations, %d reads", truncs, reads.Load())
	}
	t.Logf("%d truncations, %d reads, %d old views failed after a cut", truncs, reads.Load(), failedOld.Load())
	dir := l.Dir()
	end := l.EndOffset()
	crash(t, l)
	l = newLog(t, Config{SegmentBytes: 2000, IndexIntervalBytes: 200, RetentionMs: -1}, dir)
	if l.EndOffset() != end {
		t.Fatalf("end %d after reopen, was %d", l.EndOffset(), end)
	}
	got := readValues(t, l, 0)
	if len(got) != int(end) {
		t.Fatalf("%d values for end %d", len(got), end)
	}
}

// settle waits for the background work of the last roll (its index files
// and snapshot), so that the directory can be inspected.
func settle(l *Log) {
	l.mu.Lock()
	done := l.lastRollDone
	l.mu.Unlock()
	<-done
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	for _, at := range []int64{1000, 5, 0} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			dir := t.TempDir()
			l, bs := buildTruncLog(t, dir)
			old, err := l.Read(0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer old.Release()
			oldBytes, _ := old.Bytes()
			settle(l)
			if err := l.TruncateFullyAndStartAt(at); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != at || l.EndOffset() != at || l.LatestEpoch() != -1 {
				t.Fatalf("after restart at %d: [%d, %d) epoch %d", at, l.StartOffset(), l.EndOffset(), l.LatestEpoch())
			}
			if b, err := old.Bytes(); err != nil || !bytes.Equal(b, oldBytes) {
				t.Fatalf("a View taken before no longer reads the old bytes: %v", err)
			}
			checkTruncated(t, l, bs, -1, []string{}) // no file holds any old record
			b := withOffset(stamp(idem(3, 0, 10, "after"), 4), at)
			if _, err := l.AppendReplica(b); err != nil {
				t.Fatalf("AppendReplica at %d: %v", at, err)
			}
			crash(t, l)
			l = newLog(t, truncCfg, dir)
			if l.StartOffset() != at || l.EndOffset() != at+1 {
				t.Fatalf("after crash: [%d, %d)", l.StartOffset(), l.EndOffset())
			}
			if got := readValues(t, l, at); !equalStrings(got, []string{"after"}) {
				t.Fatalf("log holds %q", got)
			}
			wantEpochsOf(t, l, []epochEntry{{4, at}})
			if r, err := l.Append(idem(3, 0, 10, "after")); err != nil || !r.Duplicate || r.BaseOffset != at {
				t.Fatalf("retry of the replicated batch: %+v, %v", r, err)
			}
		})
	}
}
