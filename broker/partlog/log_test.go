package partlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l := newLog(t, Config{})
	r1 := mustAppend(t, l, logtest.NewBatch(vals("a", 3)...))
	r2 := mustAppend(t, l, logtest.NewBatch(vals("b", 2)...))
	if r1.BaseOffset != 0 || r1.LastOffset != 2 || r2.BaseOffset != 3 || r2.LastOffset != 4 {
		t.Fatalf("offsets %+v %+v", r1, r2)
	}
	if l.EndOffset() != 5 || l.StartOffset() != 0 {
		t.Fatalf("start %d end %d", l.StartOffset(), l.EndOffset())
	}
	got := readValues(t, l, 0)
	want := []string{"a-0", "a-1", "a-2", "b-0", "b-1"}
	if !equalStrings(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
	// An offset inside a batch returns the whole batch.
	offs, _ := logtest.Values(readBytes(t, l, 1, 1))
	if len(offs) != 3 || offs[0] != 0 {
		t.Fatalf("read at 1 returned offsets %v", offs)
	}
	// maxBytes smaller than one batch still returns that batch whole.
	b := readBytes(t, l, 3, 10)
	if offs, _ := logtest.Values(b); len(offs) != 2 || offs[0] != 3 {
		t.Fatalf("read at 3 returned offsets %v", offs)
	}
	// Past the end: empty, no error.
	if b := readBytes(t, l, 5, 1000); len(b) != 0 {
		t.Fatalf("read at end returned %d bytes", len(b))
	}
	if b := readBytes(t, l, 100, 1000); len(b) != 0 {
		t.Fatalf("read past end returned %d bytes", len(b))
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
}

func TestAppendPatchesBaseOffsetOnly(t *testing.T) {
	l := newLog(t, Config{})
	mustAppend(t, l, logtest.NewBatch([]byte("x")))
	b := logtest.NewBatch([]byte("y"), []byte("z"))
	orig := append([]byte(nil), b...)
	mustAppend(t, l, b)
	got := readBytes(t, l, 1, 1<<20)
	if !bytes.Equal(got[8:], orig[8:]) {
		t.Fatal("stored batch differs from the appended one beyond the base offset")
	}
	if _, _, err := ValidateBatch(got); err != nil {
		t.Fatalf("stored batch invalid: %v", err)
	}
}

func TestAppendSeveralBatchesAtomically(t *testing.T) {
	l := newLog(t, Config{})
	b := append(logtest.NewBatch(vals("a", 2)...), logtest.NewBatch(vals("b", 3)...)...)
	r := mustAppend(t, l, b)
	if r.BaseOffset != 0 || r.LastOffset != 4 {
		t.Fatalf("result %+v", r)
	}
	bad := append(logtest.NewBatch(vals("c", 2)...), logtest.NewBatch(vals("d", 3)...)...)
	bad[len(bad)-1] ^= 1
	if _, err := l.Append(bad); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("corrupt second batch: %v", err)
	}
	if l.EndOffset() != 5 {
		t.Fatalf("end offset %d after rejected append", l.EndOffset())
	}
	if got := readValues(t, l, 0); !equalStrings(got, []string{"a-0", "a-1", "b-0", "b-1", "b-2"}) {
		t.Fatalf("got %q", got)
	}
}

func TestValidateBatchTable(t *testing.T) {
	good := logtest.NewBatch(vals("v", 3)...)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"good", good, true},
		{"two batches", append(append([]byte(nil), good...), good...), true},
		{"empty", nil, false},
		{"short header", good[:40], false},
		{"truncated", good[:len(good)-1], false},
		{"trailing byte", append(append([]byte(nil), good...), 0), false},
		{"magic 1", mut(func(b []byte) []byte { b[16] = 1; return b }), false},
		{"crc", mut(func(b []byte) []byte { b[17] ^= 0xff; return b }), false},
		{"body flip", mut(func(b []byte) []byte { b[len(b)-2] ^= 4; return b }), false},
		{"length too big", mut(func(b []byte) []byte { b[11]++; return b }), false},
		{"length too small", mut(func(b []byte) []byte { b[8], b[9], b[10], b[11] = 0, 0, 0, 10; return b }), false},
		{"zero records", logtest.Batch(logtest.Options{RawRecords: []byte{}, RecordCount: 0}), false},
		{"delta mismatch", mut(func(b []byte) []byte { b[26]++; return b }), false},
		{"base offset ignored by crc", mut(func(b []byte) []byte { b[7] = 9; return b }), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ValidateBatch(tc.b)
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("want ErrCorruptBatch, got %v", err)
			}
			l := newLog(t, Config{})
			_, aerr := l.Append(append([]byte(nil), tc.b...))
			if (aerr == nil) != tc.ok || l.EndOffset() != 0 && !tc.ok {
				t.Fatalf("Append: err %v end %d", aerr, l.EndOffset())
			}
		})
	}
}

func TestRollAndReopen(t *testing.T) {
	cfg := Config{SegmentBytes: 1000, IndexIntervalBytes: 200}
	l := newLog(t, cfg)
	var want []string
	for i := range 60 {
		v := vals(fmt.Sprint("r", i), 1+i%4)
		mustAppend(t, l, logtest.NewBatch(v...))
		for _, x := range v {
			want = append(want, string(x))
		}
	}
	if n := len(*l.segs.Load()); n < 5 {
		t.Fatalf("only %d segments", n)
	}
	if got := readValues(t, l, 0); !equalStrings(got, want) {
		t.Fatalf("before reopen: got %d values, want %d", len(got), len(want))
	}
	end := l.EndOffset()
	l = reopen(t, l, cfg)
	if l.EndOffset() != end {
		t.Fatalf("end %d after reopen, want %d", l.EndOffset(), end)
	}
	if got := readValues(t, l, 0); !equalStrings(got, want) {
		t.Fatalf("after reopen: got %d values, want %d", len(got), len(want))
	}
	// Every offset reads back with the batch that holds it.
	for off := int64(0); off < end; off++ {
		offs, vs := logtest.Values(readBytes(t, l, off, 1))
		found := false
		for i, o := range offs {
			if o == off {
				found = string(vs[i]) == want[off]
			}
		}
		if !found {
			t.Fatalf("offset %d not in its read (%v)", off, offs)
		}
	}
	r := mustAppend(t, l, logtest.NewBatch([]byte("after")))
	if r.BaseOffset != end {
		t.Fatalf("append after reopen at %d, want %d", r.BaseOffset, end)
	}
}

func TestReadMaxBytesWholeBatches(t *testing.T) {
	l := newLog(t, Config{IndexIntervalBytes: 100})
	var sizes []int
	for i := range 20 {
		b := logtest.NewBatch(vals(fmt.Sprint("m", i), 2)...)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b)
	}
	for _, max := range []int{1, sizes[0], sizes[0] + 1, 3*sizes[0] - 1, 3 * sizes[0], 1 << 20} {
		b := readBytes(t, l, 0, max)
		n, _, err := ValidateBatch(b)
		if err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		want := max / sizes[0]
		if want < 1 {
			want = 1
		}
		if want > 20 {
			want = 20
		}
		if n != want {
			t.Fatalf("max %d: %d batches, want %d", max, n, want)
		}
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	l := newLog(t, Config{SegmentBytes: 600, IndexIntervalBytes: 150})
	for i := range 40 {
		mustAppend(t, l, logtest.Batch(logtest.Options{Timestamp: int64(1000 + 10*i)},
			logtest.Record{Value: []byte("x")}, logtest.Record{Value: []byte("y"), TimestampDelta: 5}))
	}
	check := func(l *Log) {
		t.Helper()
		for _, tc := range []struct {
			ts      int64
			off     int64
			batchTs int64
			ok      bool
		}{
			{0, 0, 1005, true}, {1005, 0, 1005, true}, {1006, 2, 1015, true}, {1200, 40, 1205, true},
			{1395, 78, 1395, true}, {1396, 0, 0, false},
		} {
			off, ts, ok := l.OffsetForTimestamp(tc.ts)
			if ok != tc.ok || ok && (off != tc.off || ts != tc.batchTs) {
				t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", tc.ts, off, ts, ok, tc.off, tc.batchTs, tc.ok)
			}
		}
	}
	check(l)
	check(reopen(t, l, Config{SegmentBytes: 600, IndexIntervalBytes: 150}))
}

// TestIndexesStayValidAcrossReopen: entries written after a clean reopen
// keep both index files loadable without a rebuild.
func TestIndexesStayValidAcrossReopen(t *testing.T) {
	cfg := Config{IndexIntervalBytes: 100}
	l := newLog(t, cfg)
	for round := range 3 {
		for i := range 10 {
			mustAppend(t, l, logtest.NewBatch(vals(fmt.Sprint(round, i), 3)...))
		}
		l = reopen(t, l, cfg)
	}
	s := (*l.segs.Load())[0]
	ib, _ := readWhole(segmentPath(l.Dir(), 0, indexSuffix))
	tb, _ := readWhole(segmentPath(l.Dir(), 0, timeIndexSuffix))
	if _, err := decodeOffsetIndex(ib, s.size.Load()); err != nil {
		t.Fatalf(".index: %v", err)
	}
	if _, err := decodeTimeIndex(tb); err != nil {
		t.Fatalf(".timeindex: %v", err)
	}
	if len(ib) == 0 || len(tb) == 0 {
		t.Fatal("no index entries written")
	}
}
