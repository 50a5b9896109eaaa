package partlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// splitBatches cuts a concatenation of whole batches into single batches.
func splitBatches(t testing.TB, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		if len(b) < batchLogOverhead {
			t.Fatalf("%d trailing bytes", len(b))
		}
		n := int(binary.BigEndian.Uint32(b[offBatchLength:])) + batchLogOverhead
		out = append(out, b[:n:n])
		b = b[n:]
	}
	return out
}

// allBatches reads the whole log, batch by batch.
func allBatches(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for next := l.StartOffset(); next < l.EndOffset(); {
		bs := splitBatches(t, readBytes(t, l, next, 1<<20))
		if len(bs) == 0 {
			t.Fatalf("empty read at %d below end %d", next, l.EndOffset())
		}
		for _, b := range bs {
			h := parseHeader(b)
			if h.baseOffset != next {
				t.Fatalf("batch at %d, want %d", h.baseOffset, next)
			}
			out = append(out, b)
			next = h.lastOffset() + 1
		}
	}
	return out
}

// dirFiles returns every file of dir by name.
func dirFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func sortedKeys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// leaderBatches is a mixed workload: epochs rising, an idempotent producer
// and plain batches, timestamps not monotonic.
func leaderBatches() [][]byte {
	var out [][]byte
	seq := int32(0)
	for i := range 40 {
		epoch := int32(i / 10 * 2)
		n := 1 + i%4
		vs := make([]string, n)
		for j := range vs {
			vs[j] = fmt.Sprintf("b%02d-r%d-%s", i, j, bytes.Repeat([]byte("x"), i*7%50))
		}
		var b []byte
		if i%3 == 0 {
			b = stamp(idem(42, 0, seq, vs...), epoch)
			seq += int32(n)
		} else {
			b = epochBatch(epoch, int64(1000+(i*37)%100), vs...)
		}
		out = append(out, b)
	}
	return out
}

func TestAppendReplicaMatchesLeader(t *testing.T) {
	now := time.Unix(5000, 0)
	cfg := Config{SegmentBytes: 1500, IndexIntervalBytes: 200, Now: func() time.Time { return now }}
	leader := newLog(t, cfg)
	for _, b := range leaderBatches() {
		mustAppend(t, leader, b)
	}
	fetched := allBatches(t, leader)

	// One batch per call: the same roll decisions, so the same files.
	follower := newLog(t, cfg)
	for _, b := range fetched {
		h := parseHeader(b)
		r, err := follower.AppendReplica(append([]byte(nil), b...))
		if err != nil {
			t.Fatalf("AppendReplica at %d: %v", h.baseOffset, err)
		}
		if r.BaseOffset != h.baseOffset || r.LastOffset != h.lastOffset() || r.MaxTimestamp != h.maxTimestamp || r.Duplicate {
			t.Fatalf("AppendReplica result %+v for batch %d..%d", r, h.baseOffset, h.lastOffset())
		}
	}
	// Several batches per call: same content, possibly other segment cuts.
	chunked := newLog(t, cfg)
	for i := 0; i < len(fetched); i += 3 {
		var chunk []byte
		for _, b := range fetched[i:min(i+3, len(fetched))] {
			chunk = append(chunk, b...)
		}
		if _, err := chunked.AppendReplica(chunk); err != nil {
			t.Fatalf("AppendReplica chunk %d: %v", i, err)
		}
	}
	for _, l := range []*Log{follower, chunked} {
		if l.EndOffset() != leader.EndOffset() || l.LatestEpoch() != leader.LatestEpoch() {
			t.Fatalf("end %d epoch %d, leader %d %d", l.EndOffset(), l.LatestEpoch(), leader.EndOffset(), leader.LatestEpoch())
		}
		if got := allBatches(t, l); !reflect2DEqual(got, fetched) {
			t.Fatal("replica's batches differ from the leader's")
		}
		for _, ts := range []int64{1000, 1050, 1099} {
			lo, lts, lok := leader.OffsetForTimestamp(ts)
			fo, fts, fok := l.OffsetForTimestamp(ts)
			if lo != fo || lts != fts || lok != fok {
				t.Fatalf("OffsetForTimestamp(%d): replica (%d,%d,%v), leader (%d,%d,%v)", ts, fo, fts, fok, lo, lts, lok)
			}
		}
		if !reflectEpochs(l, leader) {
			t.Fatalf("epoch caches differ: %v vs %v", l.epochs.snapshot(), leader.epochs.snapshot())
		}
	}
	if len(*leader.segs.Load()) < 3 {
		t.Fatalf("want several segments, have %d", len(*leader.segs.Load()))
	}

	// The replica knows the idempotent producer: a retry of its last batch
	// is a duplicate when the replica becomes leader, and the next
	// sequence is accepted.
	last := leaderBatches()[39]
	for i := 39; i >= 0; i-- {
		if b := leaderBatches()[i]; parseHeader(b).producerID == 42 {
			last = b
			break
		}
	}
	for _, l := range []*Log{leader, follower, chunked} {
		r, err := l.Append(append([]byte(nil), last...))
		if err != nil || !r.Duplicate {
			t.Fatalf("retry on %s: %+v, %v", l.Dir(), r, err)
		}
	}

	// Byte for byte after a clean close.
	ld, fd := leader.Dir(), follower.Dir()
	if err := leader.Close(); err != nil {
		t.Fatal(err)
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	lf, ff := dirFiles(t, ld), dirFiles(t, fd)
	if fmt.Sprint(sortedKeys(lf)) != fmt.Sprint(sortedKeys(ff)) {
		t.Fatalf("files differ:\nleader   %v\nreplica  %v", sortedKeys(lf), sortedKeys(ff))
	}
	for name, b := range lf {
		if !bytes.Equal(b, ff[name]) {
			t.Errorf("%s differs between leader and replica", name)
		}
	}
}

func reflect2DEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func reflectEpochs(a, b *Log) bool {
	return fmt.Sprint(a.epochs.snapshot()) == fmt.Sprint(b.epochs.snapshot())
}

func withOffset(b []byte, off int64) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint64(b, uint64(off))
	return b
}

func TestAppendReplicaOffsetChecks(t *testing.T) {
	l := newLog(t, Config{})
	b3 := logtest.NewBatch([]byte("a"), []byte("b"), []byte("c"))
	b1 := logtest.NewBatch([]byte("d"))
	steps := []struct {
		name  string
		batch []byte
		err   error
		end   int64
	}{
		{"first at 0", withOffset(b3, 0), nil, 3},
		{"behind the end", withOffset(b1, 2), ErrOffsetMismatch, 3},
		{"two in a row", append(withOffset(b1, 3), withOffset(b3, 4)...), nil, 7},
		{"overlap inside", append(withOffset(b3, 7), withOffset(b1, 8)...), ErrOffsetMismatch, 7},
		{"corrupt", append(withOffset(b1, 7)[:20], 0), ErrCorruptBatch, 7},
		{"after failures", withOffset(b1, 7), nil, 8},
	}
	for _, s := range steps {
		_, err := l.AppendReplica(s.batch)
		if !errors.Is(err, s.err) || (err == nil) != (s.err == nil) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.err)
		}
		if l.EndOffset() != s.end {
			t.Fatalf("%s: end %d, want %d", s.name, l.EndOffset(), s.end)
		}
	}
	if got := readValues(t, l, 0); !equalStrings(got, []string{"a", "b", "c", "d", "a", "b", "c", "d"}) {
		t.Fatalf("log holds %q", got)
	}
	// The replica does not judge sequences: an out-of-order batch that the
	// leader's Append would reject is taken as given.
	r, err := l.AppendReplica(withOffset(idem(9, 0, 5, "x"), 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendReplica(withOffset(idem(9, 0, 50, "y"), 9)); err != nil {
		t.Fatalf("replica rejected a sequence jump: %v", err)
	}
	// Both are in the producer's window once this replica leads.
	if r2, err := l.Append(idem(9, 0, 5, "x")); err != nil || !r2.Duplicate || r2.BaseOffset != r.BaseOffset {
		t.Fatalf("retry of the replica's first batch: %+v, %v", r2, err)
	}
	if r2, err := l.Append(idem(9, 0, 50, "y")); err != nil || !r2.Duplicate || r2.BaseOffset != 9 {
		t.Fatalf("retry of the replica's last batch: %+v, %v", r2, err)
	}
	if _, err := l.Append(idem(9, 0, 52, "z")); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap after the replica's batches: %v", err)
	}
	if r2, err := l.Append(idem(9, 0, 51, "z")); err != nil || r2.Duplicate || r2.BaseOffset != 10 {
		t.Fatalf("next sequence after the replica's batches: %+v, %v", r2, err)
	}
	// Gaps a compacted leader's cleaner left: the end jumps to the batch.
	if _, err := l.AppendReplica(withOffset(b1, 15)); err != nil || l.EndOffset() != 16 {
		t.Fatalf("batch past the end: %v, end %d", err, l.EndOffset())
	}
	if _, err := l.AppendReplica(append(withOffset(b1, 16), withOffset(b1, 18)...)); err != nil || l.EndOffset() != 19 {
		t.Fatalf("batches with a gap between them: %v, end %d", err, l.EndOffset())
	}
	if _, err := l.AppendReplica(withOffset(b1, 18)); !errors.Is(err, ErrOffsetMismatch) || l.EndOffset() != 19 {
		t.Fatalf("batch below the end after a gap: %v, end %d", err, l.EndOffset())
	}
}
