package partlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// keyed is one record as a consumer sees it.
type keyed struct {
	off        int64
	key, value string
	tombstone  bool
}

// readKeyed reads the whole log with kmsg and franz-go's decompressor,
// checking that offsets only increase.
func readKeyed(t testing.TB, l *Log) []keyed {
	t.Helper()
	dec := kgo.DefaultDecompressor()
	var out []keyed
	next := l.StartOffset()
	for next < l.EndOffset() {
		b := readBytes(t, l, next, 256<<10)
		if len(b) == 0 {
			t.Fatalf("empty read at %d below end %d", next, l.EndOffset())
		}
		for len(b) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("batch at %d: %v", next, err)
			}
			b = b[12+int(rb.Length):]
			raw, err := dec.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
			if err != nil {
				t.Fatalf("decompress batch %d: %v", rb.FirstOffset, err)
			}
			for i := int32(0); i < rb.NumRecords; i++ {
				r, n, err := parseRecord(raw)
				if err != nil {
					t.Fatalf("batch %d record %d: %v", rb.FirstOffset, i, err)
				}
				var kr kmsg.Record
				if err := kr.ReadFrom(r.raw); err != nil {
					t.Fatalf("kmsg record: %v", err)
				}
				raw = raw[n:]
				off := rb.FirstOffset + int64(kr.OffsetDelta)
				if off < next {
					continue
				}
				if len(out) > 0 && off <= out[len(out)-1].off {
					t.Fatalf("offset %d after %d", off, out[len(out)-1].off)
				}
				out = append(out, keyed{off: off, key: string(kr.Key), value: string(kr.Value), tombstone: kr.Value == nil})
			}
			if last := rb.FirstOffset + int64(rb.LastOffsetDelta); last >= next {
				next = last + 1
			}
		}
	}
	return out
}

// clock is a settable Config.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type compactModel struct {
	all []keyed // every record written, in offset order
}

// expect is what a cleaning up to point with tombstone horizon (ms) must
// leave: below point, each key's last record unless it is an old
// tombstone; from point on, everything.
func (m *compactModel) expect(point int64, horizonMs int64, ts func(off int64) int64) []keyed {
	last := map[string]int64{}
	for _, r := range m.all {
		if r.off < point {
			last[r.key] = r.off
		}
	}
	var out []keyed
	for _, r := range m.all {
		if r.off >= point {
			out = append(out, r)
			continue
		}
		if last[r.key] != r.off || (r.tombstone && ts(r.off) < horizonMs) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func sameKeyed(t testing.TB, got, want []keyed) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

const compactTsBase = 1_700_000_000_000

// fillCompacted appends updates over keys (every 13th update of a key a
// tombstone) in batches of 10, record timestamps one ms apart from
// compactTsBase, then a tail of fresh keys in the active segment.
func fillCompacted(t testing.TB, l *Log, m *compactModel, updates, keys int, codec int16) {
	t.Helper()
	write := func(rs []logtest.Record, first int64) {
		b := logtest.Batch(logtest.Options{Timestamp: compactTsBase + first}, rs...)
		if codec != 0 {
			b = compressBatch(t, b, codec)
		}
		r := mustAppend(t, l, b)
		for i, rec := range rs {
			m.all = append(m.all, keyed{off: r.BaseOffset + int64(i), key: string(rec.Key), value: string(rec.Value), tombstone: rec.Value == nil})
		}
	}
	var rs []logtest.Record
	for u := 0; u < updates; u++ {
		k := (u * 7919) % keys
		rec := logtest.Record{Key: fmt.Appendf(nil, "key-%d", k), Value: fmt.Appendf(nil, "v%d-of-%d", u, k), TimestampDelta: int64(len(rs))}
		if (u/keys)%13 == 12 || (u >= updates-keys && k%5 == 0) { // some keys end deleted
			rec.Value = nil
		}
		rs = append(rs, rec)
		if len(rs) == 10 {
			write(rs, int64(u-9))
			rs = nil
		}
	}
	if len(rs) > 0 {
		write(rs, int64(updates-len(rs)))
	}
}

var testCodecs = newCodecs()

// compressBatch re-encodes an uncompressed test batch with a codec.
func compressBatch(t testing.TB, b []byte, codec int16) []byte {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	c, err := testCodecs.compress(int(codec), rb.Records)
	if err != nil {
		t.Fatal(err)
	}
	return logtest.Batch(logtest.Options{Timestamp: rb.FirstTimestamp, Attributes: codec, RawRecords: c, RecordCount: rb.NumRecords})
}

func compactConfig(c *clock) Config {
	return Config{SegmentBytes: 64 << 10, IndexIntervalBytes: 512, RetentionMs: -1, Compact: true,
		MinCleanableDirtyRatio: 0.01, DeleteRetention: time.Hour, Now: c.now}
}

// sizeBelow is the size of the segments below offset.
func sizeBelow(l *Log, offset int64) int64 {
	var n int64
	for _, s := range *l.segs.Load() {
		if s.base < offset {
			n += s.size.Load()
		}
	}
	return n
}

// cleanAll cleans until nothing is due, returning the passes made.
func cleanAll(t testing.TB, l *Log, buf int64) int {
	t.Helper()
	passes := 0
	for ; passes < 1000; passes++ {
		c, err := l.Cleanable()
		if err != nil {
			t.Fatal(err)
		}
		if !c.Due {
			return passes
		}
		st, err := l.Clean(context.Background(), CleanOptions{DedupeBufferSize: buf})
		if err != nil {
			t.Fatalf("Clean: %v", err)
		}
		if st.MapEnd <= st.FirstDirty {
			t.Fatalf("pass %d made no progress: %+v", passes, st)
		}
	}
	t.Fatal("cleaning never finished")
	return passes
}

func tsOf(off int64) int64 { return compactTsBase + off } // fillCompacted's timestamps

func TestCleanAgainstModel(t *testing.T) {
	updates, keys := 100_000, 1000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		updates, keys = 1_000_000, 10_000
	}
	for _, tc := range []struct {
		name  string
		codec int16
		n, k  int
	}{{"uncompressed", 0, updates, keys}, {"gzip", 1, 4000, 120}, {"snappy", 2, 4000, 120}, {"lz4", 3, 4000, 120}, {"zstd", 4, 4000, 120}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.UnixMilli(compactTsBase + int64(tc.n) + 10)}
			cfg := compactConfig(clk)
			l := newLog(t, cfg)
			m := &compactModel{}
			fillCompacted(t, l, m, tc.n, tc.k, tc.codec)
			point := (*l.segs.Load())[len(*l.segs.Load())-1].base
			before := sizeBelow(l, point)
			// Tombstones are younger than delete.retention.ms: they stay.
			passes := cleanAll(t, l, int64(tc.k/3)*offsetMapEntryBytes)
			if passes < 2 {
				t.Errorf("%d passes with an offset map of a third of the keys", passes)
			}
			if got := l.CleanerCheckpoint(); got != point {
				t.Fatalf("checkpoint %d, want the active segment's base %d", got, point)
			}
			sameKeyed(t, readKeyed(t, l), m.expect(point, 0, tsOf))
			if after := sizeBelow(l, point); after*4 > before {
				t.Errorf("cleaned segments hold %d bytes, %d before", after, before)
			}
			// An hour later they go, at the next cleaning (which, as in
			// Kafka, needs a dirty log: new keys, which roll a segment).
			clk.t = clk.t.Add(2 * time.Hour)
			for n := len(*l.segs.Load()); len(*l.segs.Load()) == n; {
				rs := []logtest.Record{{Key: fmt.Appendf(nil, "tail-%d", l.EndOffset()), Value: make([]byte, 1000)}}
				r := mustAppend(t, l, logtest.Batch(logtest.Options{Timestamp: compactTsBase + l.EndOffset()}, rs...))
				m.all = append(m.all, keyed{off: r.BaseOffset, key: string(rs[0].Key), value: string(rs[0].Value)})
			}
			point = (*l.segs.Load())[len(*l.segs.Load())-1].base
			cleanAll(t, l, 0)
			want := m.expect(point, clk.t.UnixMilli()-time.Hour.Milliseconds(), tsOf)
			var tombstones int
			for _, r := range m.expect(point, 0, tsOf) {
				if r.tombstone {
					tombstones++
				}
			}
			if tombstones == 0 {
				t.Fatal("the test left no tombstone to remove")
			}
			sameKeyed(t, readKeyed(t, l), want)
			// Appends go on after cleaning, and the files reopen as they are.
			mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Key: []byte("late"), Value: []byte("x")}))
			want = append(want, keyed{off: l.EndOffset() - 1, key: "late", value: "x"})
			l = reopen(t, l, cfg)
			sameKeyed(t, readKeyed(t, l), want)
			crash(t, l)
			l = newLog(t, cfg, l.Dir())
			sameKeyed(t, readKeyed(t, l), want)
		})
	}
}

// TestCleanCrashAtEverySwapStep stops a cleaning at each step as a SIGKILL
// would, reopens the directory (recovery), and checks that nothing was
// lost or doubled; a cleaning after the restart gives the model's content.
func TestCleanCrashAtEverySwapStep(t *testing.T) {
	for _, step := range []string{stepCleaned, stepSwap, stepDeleted, stepRenamed, stepCheckpoint} {
		for _, nth := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s-%d", step, nth), func(t *testing.T) {
				clk := &clock{t: time.UnixMilli(compactTsBase + 100_000)}
				cfg := compactConfig(clk)
				cfg.SegmentBytes = 16 << 10
				l := newLog(t, cfg)
				m := &compactModel{}
				fillCompacted(t, l, m, 6000, 200, 0)
				point := (*l.segs.Load())[len(*l.segs.Load())-1].base
				orig := readKeyed(t, l)
				seen := 0
				l.cleaner.hook = func(s string) error {
					if s == step {
						if seen++; seen == nth {
							return errors.New("crash")
						}
					}
					return nil
				}
				_, err := l.Clean(context.Background(), CleanOptions{})
				if !errors.Is(err, errCleanAborted) {
					if step == stepCheckpoint && nth > 1 {
						t.Skip("one checkpoint step per pass")
					}
					t.Fatalf("Clean: %v, want the hook's crash", err)
				}
				crash(t, l)
				l = newLog(t, cfg, l.Dir())
				got := readKeyed(t, l)
				// Every record read is one written, each key's last
				// value is there, and the log is between the two states.
				want := m.expect(point, 0, tsOf)
				if len(got) < len(want) || len(got) > len(orig) {
					t.Fatalf("%d records after recovery, want %d..%d", len(got), len(want), len(orig))
				}
				byOff := map[int64]keyed{}
				for _, r := range orig {
					byOff[r.off] = r
				}
				for _, r := range got {
					if byOff[r.off] != r {
						t.Fatalf("record %+v was never written", r)
					}
				}
				gotOffs := map[int64]bool{}
				for _, r := range got {
					gotOffs[r.off] = true
				}
				for _, r := range want {
					if !gotOffs[r.off] {
						t.Fatalf("record %+v lost", r)
					}
				}
				names, _ := listDirNames(l.Dir())
				for _, n := range names {
					if n == cleanerSwapFile || len(n) > 8 && (n[len(n)-8:] == cleanedSuffix || n[len(n)-5:] == swapSuffix) {
						t.Errorf("leftover %s after recovery", n)
					}
				}
				cleanAll(t, l, 0)
				sameKeyed(t, readKeyed(t, l), want)
			})
		}
	}
}

// TestCleanKeepsProducerState: an idempotent producer goes on across a
// cleaning of its partition (sequences continue, a retry is a duplicate),
// also after a restart.
func TestCleanKeepsProducerState(t *testing.T) {
	clk := &clock{t: time.UnixMilli(compactTsBase)}
	cfg := compactConfig(clk)
	cfg.SegmentBytes = 8 << 10
	l := newLog(t, cfg)
	seq := int32(0)
	var last []byte
	produce := func(n int) {
		for i := 0; i < n; i++ {
			rs := make([]logtest.Record, 5)
			for j := range rs {
				rs[j] = logtest.Record{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "s%d", seq+int32(j))}
			}
			last = logtest.Batch(logtest.Options{Idempotent: true, ProducerID: 42, BaseSequence: seq}, rs...)
			if _, err := l.Append(append([]byte(nil), last...)); err != nil {
				t.Fatalf("append seq %d: %v", seq, err)
			}
			seq += 5
		}
	}
	produce(200)
	cleanAll(t, l, 0)
	if n := len(readKeyed(t, l)); n > 5*8<<10/50+5 {
		t.Errorf("%d records left after cleaning 5 keys", n)
	}
	for round := 0; round < 2; round++ {
		if r, err := l.Append(append([]byte(nil), last...)); err != nil || !r.Duplicate {
			t.Fatalf("retry of the last batch: %+v %v, want a duplicate", r, err)
		}
		produce(50)
		cleanAll(t, l, 0)
		crash(t, l)
		l = newLog(t, cfg, l.Dir())
	}
	got := readKeyed(t, l)
	lastOf := map[string]string{}
	for _, r := range got {
		lastOf[r.key] = r.value
	}
	for j := 0; j < 5; j++ {
		if want := fmt.Sprintf("s%d", seq-5+int32(j)); lastOf[fmt.Sprintf("k%d", j)] != want {
			t.Errorf("k%d = %q, want %q", j, lastOf[fmt.Sprintf("k%d", j)], want)
		}
	}
}

// TestCleanConcurrentReads reads the log from the start while it is being
// cleaned: every read sees whole batches in offset order, and each key's
// last value.
func TestCleanConcurrentReads(t *testing.T) {
	clk := &clock{t: time.UnixMilli(compactTsBase + 50_000)}
	cfg := compactConfig(clk)
	cfg.SegmentBytes = 16 << 10
	l := newLog(t, cfg)
	m := &compactModel{}
	fillCompacted(t, l, m, 20_000, 300, 0)
	point := (*l.segs.Load())[len(*l.segs.Load())-1].base
	want := m.expect(point, 0, tsOf)
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			lastVal := map[string]int64{}
			for _, r := range readKeyed(t, l) {
				lastVal[r.key] = r.off
			}
			for _, r := range want {
				if lastVal[r.key] < r.off {
					errs <- fmt.Errorf("key %s: last offset %d read, %d expected", r.key, lastVal[r.key], r.off)
					return
				}
			}
		}
	}()
	cleanAll(t, l, 100*offsetMapEntryBytes)
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	sameKeyed(t, readKeyed(t, l), want)
}

// TestCleanRespectsMinCompactionLag: segments with records younger than
// min.compaction.lag.ms are not touched.
func TestCleanRespectsMinCompactionLag(t *testing.T) {
	clk := &clock{t: time.UnixMilli(compactTsBase + 3000)}
	cfg := compactConfig(clk)
	cfg.MinCompactionLag = time.Minute
	l := newLog(t, cfg)
	m := &compactModel{}
	fillCompacted(t, l, m, 3000, 10, 0)
	if c, _ := l.Cleanable(); c.Due {
		t.Fatalf("due with every record younger than the lag: %+v", c)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	cleanAll(t, l, 0)
	segs := *l.segs.Load()
	sameKeyed(t, readKeyed(t, l), m.expect(segs[len(segs)-1].base, 0, tsOf))
	_ = sort.Search
}
