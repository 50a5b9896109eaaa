package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// replicate copies l's batches from the follower's end offset on, in reads
// of at most maxBytes, as a replica fetcher does.
func replicate(t testing.TB, leader, follower *Log, maxBytes int) {
	t.Helper()
	for follower.EndOffset() < leader.EndOffset() {
		b := readBytes(t, leader, follower.EndOffset(), maxBytes)
		if len(b) == 0 {
			t.Fatalf("leader read at %d below its end %d is empty", follower.EndOffset(), leader.EndOffset())
		}
		if _, err := follower.AppendReplica(b); err != nil {
			t.Fatalf("AppendReplica at %d: %v", follower.EndOffset(), err)
		}
	}
}

// TestReplicateCompactedLeader: a follower copies a leader whose log the
// cleaner left with gaps (between and inside batches, and at segment ends),
// reopens it cleanly and after a crash, cleans it itself, and truncates
// into a gap; it always holds the leader's records.
func TestReplicateCompactedLeader(t *testing.T) {
	clk := &clock{t: time.UnixMilli(compactTsBase + 20_000)}
	cfg := compactConfig(clk)
	leader := newLog(t, cfg)
	m := &compactModel{}
	fillCompacted(t, leader, m, 6000, 150, 0)
	// The keys of three whole batches among the last values get new ones,
	// so that the cleaner removes those batches between kept ones; fresh
	// keys then push them below the active segment.
	add := func(rs ...logtest.Record) {
		r := mustAppend(t, leader, logtest.Batch(logtest.Options{Timestamp: compactTsBase + leader.EndOffset()}, rs...))
		for i, rec := range rs {
			m.all = append(m.all, keyed{off: r.BaseOffset + int64(i), key: string(rec.Key), value: string(rec.Value), tombstone: rec.Value == nil})
		}
	}
	for _, r := range m.all[5900:5930] {
		add(logtest.Record{Key: []byte(r.key), Value: []byte("again")})
	}
	for segs := len(*leader.segs.Load()); len(*leader.segs.Load()) < segs+2; {
		add(logtest.Record{Key: fmt.Appendf(nil, "tail-%d", leader.EndOffset()), Value: make([]byte, 1000)})
	}
	cleanAll(t, leader, 0)
	point := leader.CleanerCheckpoint()
	want := m.expect(point, 0, tsOf)
	sameKeyed(t, readKeyed(t, leader), want)
	if len(want) == int(leader.EndOffset()) {
		t.Fatal("cleaning left no gap")
	}
	t.Logf("leader: %d records kept of %d, cleaned below %d, %d segments", len(want), leader.EndOffset(), point, len(*leader.segs.Load()))

	for _, maxBytes := range []int{1, 700, 256 << 10} {
		t.Run(fmt.Sprintf("reads of %d bytes", maxBytes), func(t *testing.T) {
			f := newLog(t, cfg)
			replicate(t, leader, f, maxBytes)
			if f.EndOffset() != leader.EndOffset() {
				t.Fatalf("follower end %d, leader's %d", f.EndOffset(), leader.EndOffset())
			}
			sameKeyed(t, readKeyed(t, f), want)
			f = reopen(t, f, cfg)
			sameKeyed(t, readKeyed(t, f), want)
			crash(t, f)
			f = newLog(t, cfg, f.Dir())
			if f.EndOffset() != leader.EndOffset() {
				t.Fatalf("after a crash the follower's end is %d, the leader's %d", f.EndOffset(), leader.EndOffset())
			}
			sameKeyed(t, readKeyed(t, f), want)
			// Its own cleaning keeps the same content (all dirty sections
			// were already clean on the leader).
			cleanAll(t, f, 0)
			own := want
			if p := f.CleanerCheckpoint(); p > point {
				own = m.expect(p, 0, tsOf)
			}
			sameKeyed(t, readKeyed(t, f), own)
		})
	}

	t.Run("truncate into a gap", func(t *testing.T) {
		f := newLog(t, cfg)
		replicate(t, leader, f, 256<<10)
		// Inside the gap the cleaner left where the three batches were.
		const cut = 5910
		if got := readKeyed(t, leader); !hasOffset(got, 5899) || hasOffset(got, 5900) || hasOffset(got, 5929) || !hasOffset(got, 5930) {
			t.Fatal("the cleaner did not leave the expected gap 5900..5929")
		}
		if err := f.TruncateTo(cut); err != nil {
			t.Fatalf("TruncateTo(%d) in a gap: %v", cut, err)
		}
		if f.EndOffset() != cut {
			t.Fatalf("end %d after TruncateTo(%d)", f.EndOffset(), cut)
		}
		// The end lies in the gap: reads there see nothing yet, and the
		// copy goes on from it with the batch after the gap.
		if b := readBytes(t, f, 5900, 1<<20); len(b) != 0 {
			t.Fatalf("read in the gap at the end returned %d bytes", len(b))
		}
		f = reopen(t, f, cfg)
		if f.EndOffset() != cut {
			t.Fatalf("end %d after reopening, want %d", f.EndOffset(), cut)
		}
		replicate(t, leader, f, 4096)
		sameKeyed(t, readKeyed(t, f), want)
		f = reopen(t, f, cfg)
		sameKeyed(t, readKeyed(t, f), want)
	})
}

func TestAppendKeepsItsChecksAfterGaps(t *testing.T) {
	l := newLog(t, Config{})
	b1 := logtest.NewBatch([]byte("a"))
	if _, err := l.AppendReplica(withOffset(b1, 5)); err != nil {
		t.Fatal(err)
	}
	// A batch claiming more offsets than records is a cleaned batch: only
	// AppendReplica takes it.
	short := logtest.NewBatch([]byte("b"))
	binary.BigEndian.PutUint32(short[offLastOffsetDelta:], 3)
	binary.BigEndian.PutUint32(short[offCRC:], crc32.Checksum(short[offAttributes:], castagnoli))
	if _, err := l.Append(append([]byte(nil), short...)); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("Append of a batch with fewer records than offsets: %v", err)
	}
	if _, err := l.AppendReplica(withOffset(short, 6)); err != nil {
		t.Fatalf("AppendReplica of a cleaned batch: %v", err)
	}
	if l.EndOffset() != 10 {
		t.Fatalf("end %d, want 10", l.EndOffset())
	}
	if _, err := l.AppendReplica(withOffset(b1, 9)); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("batch below the end: %v", err)
	}
}

func hasOffset(rs []keyed, off int64) bool {
	for _, r := range rs {
		if r.off == off {
			return true
		}
	}
	return false
}

// TestShiftedBaseOffsetIsCorruption: a batch's base offset is outside its
// CRC. In a log that never had gaps (no cleaning, no gap from a leader), a
// base offset moved up is corruption, found by reads after a clean
// shutdown and by recovery after a crash; nothing is served under offsets
// it was not written at.
func TestShiftedBaseOffsetIsCorruption(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			cfg := Config{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, RetentionMs: -1}
			l := newLog(t, cfg)
			want := map[int64]string{}
			var pos, seg int64 = -1, -1
			for i := range 200 {
				v := fmt.Sprintf("v%d-%s", i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
				active := (*l.segs.Load())[len(*l.segs.Load())-1]
				at := active.size.Load()
				r := mustAppend(t, l, logtest.NewBatch([]byte(v)))
				want[r.BaseOffset] = v
				if i == 60 {
					pos, seg = at, active.base
				}
			}
			dir := l.Dir()
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(t, l)
				os.Remove(filepath.Join(dir, recoveryPointFile))
			}
			path := segmentPath(dir, seg, logSuffix)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			base := binary.BigEndian.Uint64(data[pos:])
			binary.BigEndian.PutUint64(data[pos:], base+5)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l2, err := Open(dir, Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: cfg.IndexIntervalBytes, RetentionMs: -1, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			for off := l2.StartOffset(); off < l2.EndOffset(); off++ {
				v, err := l2.Read(off, 4096)
				if errors.Is(err, ErrCorruption) {
					continue
				}
				if err != nil {
					t.Fatalf("read %d: %v", off, err)
				}
				b, err := v.Bytes()
				v.Release()
				if err != nil || len(b) == 0 {
					break
				}
				offs, vs := logtest.Values(b)
				for i, o := range offs {
					if want[o] != string(vs[i]) {
						t.Fatalf("offset %d reads %q, written %q", o, vs[i], want[o])
					}
				}
				off = max(off, offs[len(offs)-1])
			}
		})
	}
}
