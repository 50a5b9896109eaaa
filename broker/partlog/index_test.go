package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// diskBatch is a batch header parsed by the tests themselves from the
// magic-2 layout, independently of the code under test.
type diskBatch struct {
	pos, base, last, maxTs int64
}

func parseBatches(t *testing.T, b []byte) []diskBatch {
	t.Helper()
	var out []diskBatch
	for pos := 0; pos < len(b); {
		if len(b)-pos < 61 {
			t.Fatalf("%d stray bytes at %d", len(b)-pos, pos)
		}
		h := b[pos:]
		size := 12 + int(int32(binary.BigEndian.Uint32(h[8:])))
		base := int64(binary.BigEndian.Uint64(h))
		out = append(out, diskBatch{
			pos:   int64(pos),
			base:  base,
			last:  base + int64(int32(binary.BigEndian.Uint32(h[23:]))),
			maxTs: int64(binary.BigEndian.Uint64(h[35:])),
		})
		pos += size
	}
	return out
}

type diskSegment struct {
	base    int64
	batches []diskBatch
}

// readSegments returns every segment of the directory with its batches.
func readSegments(t *testing.T, dir string) []diskSegment {
	t.Helper()
	var out []diskSegment
	for _, base := range listOffsetFiles(dirNames(t, dir), logSuffix) {
		b, err := os.ReadFile(segmentPath(dir, base, logSuffix))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, diskSegment{base: base, batches: parseBatches(t, b)})
	}
	return out
}

// checkIndexFiles checks, as Kafka 2.8's DumpLogSegments --verify-index-only
// does and more strictly, that every entry of every segment's .index and
// .timeindex points inside its segment at the right batch: an .index entry
// at a batch starting at its position and ending at its offset; a
// .timeindex entry at a batch of the segment ending at its offset, the
// first one to carry the segment's running max timestamp, which is the
// entry's timestamp. It returns the number of entries checked.
func checkIndexFiles(t *testing.T, dir string, interval int64) (nIdx, nTime int) {
	t.Helper()
	segs := readSegments(t, dir)
	for i, seg := range segs {
		if len(seg.batches) > 0 && i+1 < len(segs) && seg.batches[len(seg.batches)-1].last+1 != segs[i+1].base {
			t.Fatalf("segment %d ends at %d, next starts at %d", seg.base, seg.batches[len(seg.batches)-1].last, segs[i+1].base)
		}
		atPos := map[int64]diskBatch{}
		byLast := map[int64]int{}
		for j, b := range seg.batches {
			atPos[b.pos] = b
			byLast[b.last] = j
		}
		ib, err := os.ReadFile(segmentPath(dir, seg.base, indexSuffix))
		if err != nil {
			t.Fatalf("segment %d: %v", seg.base, err)
		}
		tb, err := os.ReadFile(segmentPath(dir, seg.base, timeIndexSuffix))
		if err != nil {
			t.Fatalf("segment %d: %v", seg.base, err)
		}
		if len(ib)%8 != 0 || len(tb)%12 != 0 {
			t.Fatalf("segment %d: index sizes %d, %d", seg.base, len(ib), len(tb))
		}
		var idx [][2]int64 // offset, position
		for k := 0; k < len(ib); k += 8 {
			off := seg.base + int64(binary.BigEndian.Uint32(ib[k:]))
			pos := int64(binary.BigEndian.Uint32(ib[k+4:]))
			b, ok := atPos[pos]
			if !ok {
				t.Fatalf("segment %d: .index entry %d@%d: no batch starts there", seg.base, off, pos)
			}
			if b.last != off {
				t.Fatalf("segment %d: .index entry %d@%d: batch there holds %d..%d (Kafka: index offset must be the batch's last offset)",
					seg.base, off, pos, b.base, b.last)
			}
			if n := len(idx); n > 0 && (off <= idx[n-1][0] || pos <= idx[n-1][1]) {
				t.Fatalf("segment %d: .index entry %d@%d after %v", seg.base, off, pos, idx[n-1])
			}
			idx = append(idx, [2]int64{off, pos})
		}
		// Entries are IndexIntervalBytes apart or more, and none is missing.
		for k, e := range idx {
			prev := int64(0)
			if k > 0 {
				prev = idx[k-1][1]
			}
			if e[1]-prev < interval {
				t.Fatalf("segment %d: .index entry at %d only %d bytes after the previous one", seg.base, e[1], e[1]-prev)
			}
		}
		if n := len(seg.batches); n > 0 {
			lastIdx := int64(0)
			if len(idx) > 0 {
				lastIdx = idx[len(idx)-1][1]
			}
			for _, b := range seg.batches {
				if b.pos > lastIdx && b.pos-lastIdx >= interval {
					t.Fatalf("segment %d: batch at %d has no .index entry (previous at %d)", seg.base, b.pos, lastIdx)
				}
			}
		}
		nIdx += len(idx)

		prevTs, prevOff := int64(-1), int64(-1)
		for k := 0; k < len(tb); k += 12 {
			ts := int64(binary.BigEndian.Uint64(tb[k:]))
			off := seg.base + int64(binary.BigEndian.Uint32(tb[k+8:]))
			j, ok := byLast[off]
			if !ok {
				end := int64(-1)
				if n := len(seg.batches); n > 0 {
					end = seg.batches[n-1].last
				}
				t.Fatalf("segment %d (offsets %d..%d): .timeindex entry (%d, %d): no batch of the segment ends there",
					seg.base, seg.base, end, ts, off)
			}
			b := seg.batches[j]
			if b.maxTs != ts {
				t.Fatalf("segment %d: .timeindex entry (%d, %d): batch max timestamp %d", seg.base, ts, off, b.maxTs)
			}
			before := int64(-1)
			for _, p := range seg.batches[:j] {
				before = max(before, p.maxTs)
			}
			if before >= ts {
				t.Fatalf("segment %d: .timeindex entry (%d, %d): an earlier batch already had max timestamp %d", seg.base, ts, off, before)
			}
			if ts <= prevTs || off <= prevOff {
				t.Fatalf("segment %d: .timeindex entry (%d, %d) after (%d, %d)", seg.base, ts, off, prevTs, prevOff)
			}
			// DumpLogSegments' own walk: look the offset up in the .index,
			// then take the first batch ending at or after it.
			pos := int64(0)
			for _, e := range idx {
				if e[0] <= off {
					pos = e[1]
				}
			}
			for _, c := range seg.batches {
				if c.pos >= pos && c.last >= off {
					if c.last != off {
						t.Fatalf("segment %d: .timeindex offset %d found batch ending %d", seg.base, off, c.last)
					}
					break
				}
			}
			prevTs, prevOff = ts, off
			nTime++
		}
		segMax := int64(-1)
		for _, b := range seg.batches {
			segMax = max(segMax, b.maxTs)
		}
		if segMax != prevTs {
			t.Fatalf("segment %d: last .timeindex timestamp %d, segment's largest %d", seg.base, prevTs, segMax)
		}
	}
	return nIdx, nTime
}

// indexWorkload appends batches of 1 to 5 records (only single-record ones
// if single) with timestamps that go up and down (or only up if rising).
func indexWorkload(t *testing.T, l *Log, rng *rand.Rand, n int, single bool, rising ...bool) {
	t.Helper()
	for b := range n {
		k := 1
		if !single {
			k = 1 + rng.IntN(5)
		}
		rs := make([]logtest.Record, k)
		for i := range rs {
			rs[i] = logtest.Record{Value: []byte(strings.Repeat("v", 10+rng.IntN(60))), TimestampDelta: int64(rng.IntN(50))}
		}
		ts := 1000 + int64(rng.IntN(2000))
		if len(rising) > 0 && rising[0] {
			ts = 1000 + 10*int64(b)
			for i := range rs {
				rs[i].TimestampDelta = int64(i)
			}
		}
		mustAppend(t, l, logtest.Batch(logtest.Options{Timestamp: ts}, rs...))
	}
}

// checkLookups checks Read at every offset and OffsetForTimestamp at many
// timestamps against the batches on disk.
func checkLookups(t *testing.T, l *Log) {
	t.Helper()
	var all []diskBatch
	for _, seg := range readSegments(t, l.Dir()) {
		all = append(all, seg.batches...)
	}
	if len(all) == 0 || all[len(all)-1].last+1 != l.EndOffset() {
		t.Fatalf("%d batches on disk, log end %d", len(all), l.EndOffset())
	}
	for _, b := range all {
		for off := b.base; off <= b.last; off++ {
			got := parseBatches(t, firstBatch(t, readBytes(t, l, off, 1)))
			if len(got) != 1 || got[0].base != b.base || got[0].last != b.last {
				t.Fatalf("Read(%d) starts with %+v, want batch %d..%d", off, got, b.base, b.last)
			}
		}
	}
	for ts := int64(990); ts <= 3060; ts += 7 {
		wantOff, wantTs, wantOK := int64(0), int64(0), false
		for _, b := range all {
			if b.maxTs >= ts {
				wantOff, wantTs, wantOK = b.base, b.maxTs, true
				break
			}
		}
		off, bts, ok := l.OffsetForTimestamp(ts)
		if ok != wantOK || off != wantOff || bts != wantTs {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", ts, off, bts, ok, wantOff, wantTs, wantOK)
		}
	}
}

func firstBatch(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 12 {
		t.Fatalf("read %d bytes", len(b))
	}
	return b[:12+int(binary.BigEndian.Uint32(b[8:]))]
}

// TestIndexEntriesPointAtTheirBatches: in a multi-segment log, every entry
// of every .index and .timeindex points inside its segment at the right
// batch (Kafka's conventions, as DumpLogSegments checks them), whether the
// entries were written by appends, across a clean reopen, by crash recovery
// or by a rebuild of deleted files; and lookups through them are right.
func TestIndexEntriesPointAtTheirBatches(t *testing.T) {
	const interval = 300
	cfg := Config{SegmentBytes: 3000, IndexIntervalBytes: interval}
	rng := rand.New(rand.NewPCG(17, 2))
	l := newLog(t, cfg)
	dir := l.Dir()
	indexWorkload(t, l, rng, 200, false)
	checkLookups(t, l)

	check := func(stage string) {
		t.Helper()
		nIdx, nTime := checkIndexFiles(t, dir, interval)
		segs := len(readSegments(t, dir))
		t.Logf("%s: %d segments, %d .index and %d .timeindex entries checked", stage, segs, nIdx, nTime)
		if segs < 5 || nIdx < 2*segs || nTime < 2*segs {
			t.Fatalf("%s: too few entries to mean anything: %d segments, %d, %d", stage, segs, nIdx, nTime)
		}
	}

	l = reopen(t, l, cfg) // entries written by appends and at Close
	check("appended")
	checkLookups(t, l)
	indexWorkload(t, l, rng, 60, false) // continues the active segment after its closing entry
	l = reopen(t, l, cfg)
	check("appended after a clean reopen")
	checkLookups(t, l)

	indexWorkload(t, l, rng, 60, false)
	crash(t, l)
	os.Remove(filepath.Join(dir, recoveryPointFile)) // recover every segment
	l = newLog(t, cfg, dir)
	checkLookups(t, l)
	l = reopen(t, l, cfg)
	check("recovered")

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, seg := range readSegments(t, dir) {
		os.Remove(segmentPath(dir, seg.base, indexSuffix))
		os.Remove(segmentPath(dir, seg.base, timeIndexSuffix))
	}
	l = newLog(t, cfg, dir)
	checkLookups(t, l) // rebuilds every index on first use
	l = reopen(t, l, cfg)
	check("rebuilt")
	checkLookups(t, l)
}

// writeOldIndexes replaces every segment's index files with what Tributary
// wrote before it followed Kafka's conventions: .index entries by the
// batch's base offset; .timeindex entries (largest timestamp of the batches
// before, base offset of the batch) and a last one past the segment's end.
func writeOldIndexes(t *testing.T, dir string, interval int64) {
	t.Helper()
	for _, seg := range readSegments(t, dir) {
		var ib, tb []byte
		var lastIndexed int64
		maxTs := int64(-1)
		for _, b := range seg.batches {
			if b.pos > 0 && b.pos-lastIndexed >= interval {
				rel := uint32(b.base - seg.base)
				ib = offsetEntry{rel: rel, pos: uint32(b.pos)}.appendTo(ib)
				tb = timeEntry{ts: maxTs, rel: rel}.appendTo(tb)
				lastIndexed = b.pos
			}
			maxTs = max(maxTs, b.maxTs)
		}
		if n := len(seg.batches); n > 0 {
			tb = timeEntry{ts: maxTs, rel: uint32(seg.batches[n-1].last + 1 - seg.base)}.appendTo(tb)
		}
		if err := os.WriteFile(segmentPath(dir, seg.base, indexSuffix), ib, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(dir, seg.base, timeIndexSuffix), tb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOldIndexConventionIsRebuilt: index files of the older convention are
// rebuilt at the first Open of an upgraded directory (recognized by its
// legacy snapshot names) without any read, and otherwise before their first
// use, so no lookup goes through them. Single-record batches make the old
// .index identical to the new one, and rising timestamps make the old
// .timeindex well-formed: only its last entry, past the segment, gives the
// files away.
func TestOldIndexConventionIsRebuilt(t *testing.T) {
	const interval = 250
	cfg := Config{SegmentBytes: 2500, IndexIntervalBytes: interval}
	for _, single := range []bool{false, true} {
		for _, upgrade := range []bool{true, false} {
			t.Run(fmt.Sprintf("single=%v,upgrade=%v", single, upgrade), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, 4))
				l := newLog(t, cfg)
				dir := l.Dir()
				indexWorkload(t, l, rng, 150, single, single)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				writeOldIndexes(t, dir, interval)
				snaps := listOffsetFiles(dirNames(t, dir), snapshotSuffix)
				if len(snaps) == 0 {
					t.Fatal("no producer snapshot written")
				}
				for _, off := range snaps {
					p := snapshotPath(dir, off)
					if upgrade {
						err := os.Rename(p, strings.TrimSuffix(p, snapshotSuffix)+legacySnapshotSuffix)
						if err != nil {
							t.Fatal(err)
						}
					} else {
						os.Remove(p)
					}
				}
				l = newLog(t, cfg, dir)
				if upgrade {
					// No read: Open alone must have rewritten every file.
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					checkIndexFiles(t, dir, interval)
					l = newLog(t, cfg, dir)
				}
				checkLookups(t, l)
				l = reopen(t, l, cfg)
				checkIndexFiles(t, dir, interval)
				checkLookups(t, l)
			})
		}
	}
}

// TestLegacySnapshotsAreMigrated: producer snapshots an older version wrote
// as "<offset>.snapshot" are renamed and loaded, so a producer whose batches
// all lie in sealed segments is still known after the upgrade (a retry is a
// duplicate, a gap is refused); a ".snapshot" that is not ours stays as is.
func TestLegacySnapshotsAreMigrated(t *testing.T) {
	cfg := Config{SegmentBytes: 400}
	l := newLog(t, cfg)
	dir := l.Dir()
	for seq := int32(0); seq < 6; seq++ {
		mustAppend(t, l, idem(42, 3, seq, fmt.Sprint("p", seq)))
	}
	for i := range 20 { // push the producer's batches out of the active segment
		mustAppend(t, l, logtest.NewBatch([]byte(fmt.Sprint("filler-", i, strings.Repeat("x", 40)))))
	}
	segs := *l.segs.Load()
	if last := segs[len(segs)-1]; last.base <= 6 {
		t.Fatalf("active segment starts at %d: the producer's batches are in it", last.base)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snaps := listOffsetFiles(dirNames(t, dir), snapshotSuffix)
	if len(snaps) == 0 {
		t.Fatal("no snapshot written")
	}
	for _, off := range snaps {
		p := snapshotPath(dir, off)
		if err := os.Rename(p, strings.TrimSuffix(p, snapshotSuffix)+legacySnapshotSuffix); err != nil {
			t.Fatal(err)
		}
	}
	foreign := filepath.Join(dir, fmt.Sprintf("%020d%s", 3, legacySnapshotSuffix))
	kafkaBytes := []byte{0, 1, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := os.WriteFile(foreign, kafkaBytes, 0o644); err != nil {
		t.Fatal(err)
	}

	l = newLog(t, cfg, dir)
	names := dirNames(t, dir)
	if got := listOffsetFiles(names, snapshotSuffix); len(got) != len(snaps) || got[len(got)-1] != snaps[len(snaps)-1] {
		t.Fatalf("snapshots after open %v, want %v", got, snaps)
	}
	if got := listOffsetFiles(names, legacySnapshotSuffix); len(got) != 1 || got[0] != 3 {
		t.Fatalf("legacy names left %v, want only the foreign file", got)
	}
	if b, err := os.ReadFile(foreign); err != nil || string(b) != string(kafkaBytes) {
		t.Fatalf("foreign file changed: %x, %v", b, err)
	}
	r, err := l.Append(idem(42, 3, 5, "p5"))
	if err != nil || !r.Duplicate || r.BaseOffset != 5 {
		t.Fatalf("retry of the producer's last batch: %+v, %v; want a duplicate at 5", r, err)
	}
	if _, err := l.Append(idem(42, 3, 9, "gap")); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence gap after the upgrade: %v, want ErrOutOfOrderSequence", err)
	}
	mustAppend(t, l, idem(42, 3, 6, "p6"))
}
