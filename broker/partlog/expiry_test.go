package partlog

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// expectDup asserts that batch is recognised as a retry of the batch at base.
func expectDup(t *testing.T, l *Log, batch []byte, base int64, how string) {
	t.Helper()
	r, err := l.Append(batch)
	if err != nil || !r.Duplicate || r.BaseOffset != base {
		t.Fatalf("%s: want duplicate of offset %d, got %+v, %v", how, base, r, err)
	}
}

// expectNew asserts that batch is appended at base (not taken as a retry).
func expectNew(t *testing.T, l *Log, batch []byte, base int64, how string) {
	t.Helper()
	r, err := l.Append(batch)
	if err != nil || r.Duplicate || r.BaseOffset != base {
		t.Fatalf("%s: want a new batch at offset %d, got %+v, %v", how, base, r, err)
	}
}

func TestProducerExpiryByClock(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	for _, tc := range []struct {
		name     string
		exp      time.Duration
		lifetime time.Duration // how long an idle producer is remembered; 0 = forever
	}{
		{"default 24h", 0, 24 * time.Hour},
		{"one hour", time.Hour, time.Hour},
		{"sub-millisecond rounds up", time.Microsecond, time.Millisecond},
		{"never", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: start}
			l := newLog(t, Config{ProducerIDExpiration: tc.exp, Now: clock.now})
			expectNew(t, l, idem(7, 3, 0, "a", "b"), 0, "first")
			expectNew(t, l, idem(7, 3, 2, "c"), 2, "second")
			if tc.lifetime == 0 {
				clock.t = start.Add(1000 * time.Hour)
				l.ApplyRetention()
				expectDup(t, l, idem(7, 3, 2, "c"), 2, "never expires")
				if _, err := l.Append(idem(7, 2, 0, "x")); !errors.Is(err, ErrInvalidProducerEpoch) {
					t.Fatalf("old epoch after 1000h: %v", err)
				}
				return
			}
			// Just before the deadline the producer is known; the retry
			// does not refresh it (nothing was appended).
			clock.t = start.Add(tc.lifetime - time.Millisecond)
			expectDup(t, l, idem(7, 3, 2, "c"), 2, "just before expiry")
			if _, err := l.Append(idem(7, 3, 9, "x")); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap just before expiry: %v", err)
			}
			// Expired: before any sweep, Append alone treats it as unknown,
			// so a retry of its last batch is a new batch and any sequence
			// or older epoch starts it afresh.
			clock.t = start.Add(tc.lifetime)
			expectNew(t, l, idem(7, 1, 500, "d"), 3, "expired, older epoch, new sequence")
			expectNew(t, l, idem(7, 1, 501, "e"), 4, "next after restart")
			expectDup(t, l, idem(7, 1, 501, "e"), 4, "retry after restart")
			if _, err := l.Append(idem(7, 1, 503, "x")); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			if _, err := l.Append(idem(7, 0, 0, "x")); !errors.Is(err, ErrInvalidProducerEpoch) {
				t.Fatalf("older epoch after restart: %v", err)
			}
			// The sweep deletes only idle producers.
			expectNew(t, l, idem(8, 0, 0, "f"), 5, "second producer")
			clock.t = clock.t.Add(tc.lifetime)
			expectNew(t, l, idem(8, 0, 1, "g"), 6, "second producer stays busy")
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
			if _, ok := l.producers.m[7]; ok || len(l.producers.m) != 1 || l.producers.m[8] == nil {
				t.Fatalf("after sweep: producers %v, want only 8", keys(l.producers.m))
			}
			if got := readValues(t, l, 0); !equalStrings(got, []string{"a", "b", "c", "d", "e", "f", "g"}) {
				t.Fatalf("log holds %q", got)
			}
		})
	}
}

func keys(m map[int64]*producerEntry) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestProducerPrunedByRetention: a producer whose batches retention deleted
// is forgotten, in memory and after a reopen, clean or not; one with a
// batch above the new start is kept.
func TestProducerPrunedByRetention(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean reopen", false: "crash"}[clean]
		t.Run(name, func(t *testing.T) {
			cfg := Config{SegmentBytes: 500, RetentionBytes: 1500, RetentionMs: -1}
			l := newLog(t, cfg)
			expectNew(t, l, idem(1, 0, 0, "old-a"), 0, "producer 1")
			expectNew(t, l, idem(1, 0, 1, "old-b"), 1, "producer 1")
			for i := range 30 {
				mustAppend(t, l, logtest.NewBatch([]byte{'v', byte('0' + i%10)}))
			}
			last := mustAppend(t, l, idem(2, 0, 0, "recent"))
			if l.producers.m[1] == nil {
				t.Fatal("producer 1 lost before retention")
			}
			if n, err := l.ApplyRetention(); err != nil || n == 0 || l.StartOffset() <= 1 {
				t.Fatalf("ApplyRetention: %d segments, start %d, %v", n, l.StartOffset(), err)
			}
			check := func(l *Log, how string) {
				t.Helper()
				if e := l.producers.m[1]; e != nil {
					t.Fatalf("%s: producer 1 (last offset 1) kept below start %d", how, l.StartOffset())
				}
				if l.producers.m[2] == nil {
					t.Fatalf("%s: producer 2 lost", how)
				}
			}
			check(l, "after retention")
			if clean {
				l = reopen(t, l, cfg)
			} else {
				crash(t, l)
				l = newLog(t, cfg, l.Dir())
			}
			check(l, name)
			expectDup(t, l, idem(2, 0, 0, "recent"), last.BaseOffset, name+": producer 2 retry")
			end := l.EndOffset()
			expectNew(t, l, idem(1, 0, 1, "old-b"), end, name+": producer 1 resend")
		})
	}
}

// TestProducerExpiryAcrossReopen: a producer still live survives a clean
// reopen with its duplicate window; one that expired is not brought back by
// the snapshots written while it was live, after a clean reopen or a crash.
func TestProducerExpiryAcrossReopen(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean reopen", false: "crash"}[clean]
		t.Run(name, func(t *testing.T) {
			start := time.UnixMilli(1_700_000_000_000)
			clock := &fakeClock{t: start}
			cfg := Config{ProducerIDExpiration: time.Hour, SegmentBytes: 300, Now: clock.now}
			l := newLog(t, cfg)
			for i := int32(0); i < 10; i++ {
				mustAppend(t, l, idem(5, 0, i, "early"))
			}
			clock.t = start.Add(40 * time.Minute)
			for i := int32(0); i < 10; i++ {
				mustAppend(t, l, idem(6, 0, i, "late"))
			}
			// Rolls happened while both producers were live, so snapshots
			// on disk list producer 5 (Flush waits for the rolls' writes).
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(listOffsetFiles(dirNames(t, l.Dir()), snapshotSuffix)) == 0 {
				t.Fatal("no snapshot written by the rolls")
			}
			clock.t = start.Add(time.Hour + time.Minute) // 5 expired, 6 not
			if clean {
				l = reopen(t, l, cfg)
			} else {
				crash(t, l)
				l = newLog(t, cfg, l.Dir())
			}
			if l.producers.m[5] != nil {
				t.Fatalf("%s: expired producer 5 resurrected", name)
			}
			e6 := l.producers.m[6]
			if e6 == nil || len(e6.batches) != producerWindow {
				t.Fatalf("%s: producer 6 state %+v", name, e6)
			}
			end := l.EndOffset()
			expectDup(t, l, idem(6, 0, 9, "late"), end-1, name+": producer 6 retry")
			if _, err := l.Append(idem(6, 0, 12, "x")); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("%s: producer 6 gap: %v", name, err)
			}
			expectNew(t, l, idem(5, 0, 9, "early"), end, name+": producer 5 resend is new")
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names
}

func TestSnapshotFormat(t *testing.T) {
	ps := newProducerState(1000)
	ps.m[42] = &producerEntry{epoch: 3, lastAppendMs: 1_700_000_000_123, batches: []producerBatch{
		{firstSeq: 0, lastSeq: 4, firstOffset: 10, lastOffset: 14, maxTs: 99},
		{firstSeq: 5, lastSeq: 5, firstOffset: 20, lastOffset: 20, maxTs: 100},
	}}
	ps.m[-0x7fff] = &producerEntry{epoch: -1, lastAppendMs: 5}
	got, err := decodeSnapshot(ps.encode(), 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.m) != 2 || got.expireMs != 1000 {
		t.Fatalf("decoded %d producers, expireMs %d", len(got.m), got.expireMs)
	}
	for id, want := range ps.m {
		e := got.m[id]
		if e == nil || e.epoch != want.epoch || e.lastAppendMs != want.lastAppendMs || len(e.batches) != len(want.batches) {
			t.Fatalf("producer %d: %+v, want %+v", id, e, want)
		}
		for i := range want.batches {
			if e.batches[i] != want.batches[i] {
				t.Fatalf("producer %d batch %d: %+v, want %+v", id, i, e.batches[i], want.batches[i])
			}
		}
	}

	// Version 1 has no append time: producers count as appended at load.
	v1 := append([]byte(snapshotMagic), 0, 1, 0, 0, 0, 1)
	v1 = binary.BigEndian.AppendUint64(v1, 9)
	v1 = append(v1, 0, 2, 1)
	for _, x := range []uint64{7<<32 | 8, 30, 31, 77} {
		v1 = binary.BigEndian.AppendUint64(v1, x)
	}
	v1 = binary.BigEndian.AppendUint32(v1, crc32.Checksum(v1, castagnoli))
	old, err := decodeSnapshot(v1, -1, 555)
	if err != nil {
		t.Fatal(err)
	}
	want := producerBatch{firstSeq: 7, lastSeq: 8, firstOffset: 30, lastOffset: 31, maxTs: 77}
	if e := old.m[9]; e == nil || e.epoch != 2 || e.lastAppendMs != 555 || len(e.batches) != 1 || e.batches[0] != want {
		t.Fatalf("v1 snapshot decoded to %+v", old.m[9])
	}
	for _, bad := range [][]byte{v1[:len(v1)-5], append(ps.encode()[:6], 0, 0, 0, 9)} {
		if _, err := decodeSnapshot(bad, -1, 0); err == nil {
			t.Fatalf("accepted damaged snapshot %x", bad)
		}
	}
}
