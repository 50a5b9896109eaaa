package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// txnEvent is one batch the model appended.
type txnEvent struct {
	base   int64
	count  int64
	pid    int64
	epoch  int16
	seq    int32
	kind   string // "plain", "idem", "txn", "commit", "abort"
	values []string
}

// txnModel is what a log of events must answer, derived by replaying them.
type txnModel struct {
	end     int64
	ongoing map[int64]int64 // pid -> first offset
	txnVals map[int64][]string
	visible []struct {
		off int64
		v   string
	} // committed or non-transactional records, by offset
	aborted  []AbortedTxn // by marker offset (LastStableOffset not compared)
	nextSeq  map[int64]int32
	epochs   map[int64]int16
	coordEps map[int64]int32
}

func replayTxnModel(events []txnEvent) *txnModel {
	m := &txnModel{ongoing: map[int64]int64{}, txnVals: map[int64][]string{}, nextSeq: map[int64]int32{},
		epochs: map[int64]int16{}, coordEps: map[int64]int32{}}
	type pending struct {
		off int64
		v   string
	}
	pend := map[int64][]pending{}
	for _, e := range events {
		m.end = e.base + e.count
		switch e.kind {
		case "plain", "idem":
			for i, v := range e.values {
				m.visible = append(m.visible, struct {
					off int64
					v   string
				}{e.base + int64(i), v})
			}
		case "txn":
			if _, ok := m.ongoing[e.pid]; !ok {
				m.ongoing[e.pid] = e.base
			}
			for i, v := range e.values {
				pend[e.pid] = append(pend[e.pid], pending{e.base + int64(i), v})
			}
		case "commit", "abort":
			first, ok := m.ongoing[e.pid]
			if !ok {
				first = e.base
			}
			delete(m.ongoing, e.pid)
			if e.kind == "commit" {
				for _, p := range pend[e.pid] {
					m.visible = append(m.visible, struct {
						off int64
						v   string
					}{p.off, p.v})
				}
			} else {
				m.aborted = append(m.aborted, AbortedTxn{ProducerID: e.pid, FirstOffset: first, LastOffset: e.base})
			}
			delete(pend, e.pid)
		}
		if e.pid >= 0 && e.kind != "commit" && e.kind != "abort" {
			m.nextSeq[e.pid] = e.seq + int32(e.count)
			m.epochs[e.pid] = e.epoch
		}
	}
	sort.Slice(m.visible, func(i, j int) bool { return m.visible[i].off < m.visible[j].off })
	return m
}

func (m *txnModel) lso() int64 {
	lso := m.end
	for _, f := range m.ongoing {
		lso = min(lso, f)
	}
	return lso
}

// readCommitted reads [from, upper) as a read_committed Kafka consumer
// does: the log's aborted transactions for the range name the producers
// whose transactional batches to skip, from each one's first offset until
// its ABORT marker; control batches are never returned.
func readCommitted(t testing.TB, l *Log, from, upper int64) []string {
	t.Helper()
	aborted := l.AbortedTransactions(from, upper)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	skipping := map[int64]bool{}
	var out []string
	next := from
	for next < upper {
		b := readBytes(t, l, next, 64<<10)
		if len(b) == 0 {
			t.Fatalf("empty read at %d below %d", next, upper)
		}
		for len(b) > 0 && next < upper {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("decode batch at %d: %v", next, err)
			}
			b = b[12+int(rb.Length):]
			last := rb.FirstOffset + int64(rb.LastOffsetDelta)
			if last < next {
				continue
			}
			if rb.FirstOffset >= upper {
				next = upper
				break
			}
			for len(aborted) > 0 && aborted[0].FirstOffset <= last {
				skipping[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			switch {
			case rb.Attributes&attrControl != 0:
				var rec kmsg.Record
				if err := rec.ReadFrom(rb.Records); err != nil || len(rec.Key) != 4 {
					t.Fatalf("control batch at %d: %v, key %x", rb.FirstOffset, err, rec.Key)
				}
				if binary.BigEndian.Uint16(rec.Key[2:]) == markerAbort {
					delete(skipping, rb.ProducerID)
				}
			case rb.Attributes&attrTransactional != 0 && skipping[rb.ProducerID]:
			default:
				offs, vs := logtest.Values(rb.AppendTo(nil))
				for i, v := range vs {
					if off := offs[i]; off >= next && off < upper {
						out = append(out, string(v))
					}
				}
			}
			next = last + 1
		}
	}
	return out
}

// TestTxnAgainstModel drives a Log with random interleavings of
// transactional producers (data, commits, aborts, empty transactions), plain
// and idempotent producers, unclean reopens (crashes), clean reopens and
// truncations, and checks after every step the last stable offset, the
// aborted transactions for random ranges, and what a read_committed reader
// gets, against a model replaying the same batches.
func TestTxnAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRIBUTARY_TXN_SEED"); s != "" { // to replay a failure
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 31))
	cfg := Config{SegmentBytes: int64(400 + rng.IntN(2000)), IndexIntervalBytes: 1 + rng.IntN(400), RetentionMs: -1}
	l := newLog(t, cfg)
	var events []txnEvent
	txnPids := []int64{100, 101, 102, 103}
	step := 0
	appendData := func(kind string, pid int64, m *txnModel) {
		n := 1 + rng.IntN(4)
		var rs []logtest.Record
		var vs []string
		for i := range n {
			v := fmt.Sprintf("%s-p%d-s%d-%d", kind, pid, step, i)
			vs = append(vs, v)
			rs = append(rs, logtest.Record{Value: []byte(v)})
		}
		o := logtest.Options{}
		ev := txnEvent{count: int64(n), pid: -1, kind: kind, values: vs}
		if kind != "plain" {
			ev.pid, ev.epoch, ev.seq = pid, m.epochs[pid], m.nextSeq[pid]
			o = logtest.Options{ProducerID: pid, Idempotent: true, ProducerEpoch: ev.epoch, BaseSequence: ev.seq}
			if kind == "txn" {
				o.Attributes = attrTransactional
			}
		}
		r := mustAppend(t, l, logtest.Batch(o, rs...))
		if r.BaseOffset != m.end {
			t.Fatalf("step %d: %s append at %d, model end %d", step, kind, r.BaseOffset, m.end)
		}
		ev.base = r.BaseOffset
		events = append(events, ev)
	}
	for step = range 600 {
		m := replayTxnModel(events)
		op := rng.IntN(100)
		if os.Getenv("TRIBUTARY_TXN_DEBUG") != "" {
			t.Logf("step %d op %d end %d segs %d", step, op, l.EndOffset(), len(*l.segs.Load()))
		}
		switch {
		case op < 15:
			appendData("plain", -1, m)
		case op < 25:
			appendData("idem", 7, m)
		case op < 60:
			appendData("txn", txnPids[rng.IntN(len(txnPids))], m)
		case op < 80: // a marker, usually for an ongoing transaction
			pid := txnPids[rng.IntN(len(txnPids))]
			commit := rng.IntN(2) == 0
			r, err := l.AppendMarker(pid, m.epochs[pid], 1, commit, -1)
			if err != nil {
				t.Fatalf("step %d: marker: %v", step, err)
			}
			kind := "abort"
			if commit {
				kind = "commit"
			}
			events = append(events, txnEvent{base: r.BaseOffset, count: 1, pid: pid, epoch: m.epochs[pid], kind: kind})
		case op < 87:
			crash(t, l)
			var err error
			if l, err = Open(l.Dir(), Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: cfg.IndexIntervalBytes, RetentionMs: -1, Logger: quietLogger()}); err != nil {
				t.Fatalf("step %d: reopen after crash: %v", step, err)
			}
			lc := l
			t.Cleanup(func() { lc.Close() })
		case op < 92:
			l = reopen(t, l, cfg)
		default: // truncate to a random batch boundary, as a follower would
			if len(events) == 0 {
				break
			}
			k := rng.IntN(len(events))
			if err := l.TruncateTo(events[k].base); err != nil {
				t.Fatalf("step %d: truncate to %d: %v", step, events[k].base, err)
			}
			events = events[:k]
		}
		checkTxnModel(t, l, replayTxnModel(events), rng, step)
	}
}

func checkTxnModel(t *testing.T, l *Log, m *txnModel, rng *rand.Rand, step int) {
	t.Helper()
	end := l.EndOffset()
	if end != m.end {
		t.Fatalf("step %d: end %d, model %d", step, end, m.end)
	}
	lso := m.lso()
	if got := l.LastStableOffset(end); got != lso {
		t.Fatalf("step %d: LSO %d, model %d (ongoing %v)", step, got, lso, m.ongoing)
	}
	if hw := end / 2; l.LastStableOffset(hw) != min(hw, lso) {
		t.Fatalf("step %d: LSO(hw %d) = %d, want %d", step, hw, l.LastStableOffset(hw), min(hw, lso))
	}
	from := rng.Int64N(lso + 1)
	var want []AbortedTxn
	for _, a := range m.aborted {
		if a.LastOffset >= from && a.FirstOffset < lso {
			want = append(want, a)
		}
	}
	got := l.AbortedTransactions(from, lso)
	if len(got) != len(want) {
		t.Fatalf("step %d: aborted in [%d, %d): %+v, model %+v", step, from, lso, got, want)
	}
	for i := range got {
		if got[i].ProducerID != want[i].ProducerID || got[i].FirstOffset != want[i].FirstOffset || got[i].LastOffset != want[i].LastOffset {
			t.Fatalf("step %d: aborted %d: %+v, model %+v", step, i, got[i], want[i])
		}
	}
	var wantVals []string
	for _, r := range m.visible {
		if r.off >= from && r.off < lso {
			wantVals = append(wantVals, r.v)
		}
	}
	if gotVals := readCommitted(t, l, from, lso); !equalStrings(gotVals, wantVals) {
		t.Fatalf("step %d: read_committed [%d, %d):\n got %q\nwant %q", step, from, lso, gotVals, wantVals)
	}
}

// TestTxnMarkerChecks: markers are fenced by producer and coordinator
// epochs, clients cannot append control batches, and a transactional
// batch needs a producer id; an ongoing transaction refuses plain batches
// of the same producer.
func TestTxnMarkerChecks(t *testing.T) {
	l := newLog(t, Config{RetentionMs: -1})
	txn := logtest.Options{ProducerID: 5, Idempotent: true, ProducerEpoch: 3, Attributes: attrTransactional}
	mustAppend(t, l, logtest.Batch(txn, logtest.Record{Value: []byte("a")}))
	if _, err := l.AppendMarker(5, 2, 0, true, -1); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an older epoch: %v", err)
	}
	if _, err := l.AppendMarker(5, 3, 4, false, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendMarker(5, 3, 3, false, -1); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker of an older coordinator epoch: %v", err)
	}
	ctl := logtest.Batch(logtest.Options{ProducerID: 5, Idempotent: true, ProducerEpoch: 3, Attributes: attrTransactional | attrControl},
		logtest.Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 9}})
	if _, err := l.Append(ctl); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("client control batch: %v", err)
	}
	if _, err := l.Append(logtest.Batch(logtest.Options{Attributes: attrTransactional}, logtest.Record{Value: []byte("x")})); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("transactional batch without producer id: %v", err)
	}
	txn.BaseSequence = 1
	mustAppend(t, l, logtest.Batch(txn, logtest.Record{Value: []byte("b")}))
	plain := logtest.Options{ProducerID: 5, Idempotent: true, ProducerEpoch: 3, BaseSequence: 2}
	if _, err := l.Append(logtest.Batch(plain, logtest.Record{Value: []byte("c")})); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch during a transaction: %v", err)
	}
	if l.EndOffset() != 3 || l.LastStableOffset(3) != 2 {
		t.Fatalf("end %d LSO %d, want 3 and 2", l.EndOffset(), l.LastStableOffset(3))
	}
	ps := l.Producers()
	if len(ps) != 1 || ps[0].ProducerID != 5 || ps[0].ProducerEpoch != 3 || ps[0].TxnStartOffset != 2 || ps[0].CoordinatorEpoch != 4 || ps[0].LastSequence != 1 {
		t.Fatalf("producers %+v", ps)
	}
}

// TestTxnIndexFiles: the .txnindex holds Kafka's 34-byte entries for the
// aborts of its segment, survives a clean reopen, and goes with its segment.
func TestTxnIndexFiles(t *testing.T) {
	cfg := Config{SegmentBytes: 300, RetentionMs: -1, RetentionBytes: 1}
	l := newLog(t, cfg)
	for i := range 6 {
		pid := int64(10 + i)
		mustAppend(t, l, logtest.Batch(logtest.Options{ProducerID: pid, Idempotent: true, Attributes: attrTransactional},
			logtest.Record{Value: fmt.Appendf(nil, "txn-%d-%s", i, make([]byte, 100))}))
		if _, err := l.AppendMarker(pid, 0, 0, i%2 == 0, -1); err != nil {
			t.Fatal(err)
		}
	}
	l = reopen(t, l, Config{SegmentBytes: 300, RetentionMs: -1})
	names := dirNames(t, l.Dir())
	var files, entries int
	for _, base := range listOffsetFiles(names, txnIndexSuffix) {
		b, err := os.ReadFile(filepath.Join(l.Dir(), fmt.Sprintf("%020d%s", base, txnIndexSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%txnIndexEntrySize != 0 || len(b) == 0 {
			t.Fatalf("txnindex %d: %d bytes", base, len(b))
		}
		files++
		entries += len(b) / txnIndexEntrySize
	}
	if entries != 3 || files == 0 {
		t.Fatalf("%d txnindex files with %d entries, want 3 aborts", files, entries)
	}
	got := l.AbortedTransactions(0, l.EndOffset())
	if len(got) != 3 || got[0].ProducerID != 11 || got[1].ProducerID != 13 || got[2].ProducerID != 15 {
		t.Fatalf("aborted after reopen: %+v", got)
	}
	l.Close()
	l = newLog(t, cfg, l.Dir())
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	for _, base := range listOffsetFiles(dirNames(t, l.Dir()), txnIndexSuffix) {
		if base < (*l.segs.Load())[0].base {
			t.Fatalf("txnindex %d outlived its segment", base)
		}
	}
	for _, a := range l.AbortedTransactions(l.StartOffset(), l.EndOffset()) {
		if a.LastOffset < l.StartOffset() {
			t.Fatalf("aborted transaction %+v below log start %d", a, l.StartOffset())
		}
	}
}

// TestSnapshotV3Transactions: version 3 snapshots carry each producer's
// ongoing transaction and coordinator epoch; version 2 ones (before
// transactions) still load, with none ongoing.
func TestSnapshotV3Transactions(t *testing.T) {
	ps := newProducerState(-1)
	ps.m[1] = &producerEntry{epoch: 2, lastAppendMs: 10, txnFirst: 40, coordEpoch: 6,
		batches: []producerBatch{{firstSeq: 0, lastSeq: 1, firstOffset: 40, lastOffset: 41, maxTs: 5}}}
	ps.m[2] = newProducerEntry(0)
	ps.apply(map[int64]*producerEntry{1: ps.m[1], 2: ps.m[2]})
	got, err := decodeSnapshot(ps.encode(), -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.m[1]; e == nil || e.txnFirst != 40 || e.coordEpoch != 6 || got.ongoing[1] != 40 || got.firstUnstable() != 40 {
		t.Fatalf("v3 round trip: %+v, ongoing %v", got.m[1], got.ongoing)
	}
	if e := got.m[2]; e == nil || e.txnFirst != -1 || e.coordEpoch != -1 || len(got.ongoing) != 1 {
		t.Fatalf("v3 round trip of a producer without a transaction: %+v, ongoing %v", got.m[2], got.ongoing)
	}

	v2 := append([]byte(snapshotMagic), 0, 2, 0, 0, 0, 1)
	v2 = binary.BigEndian.AppendUint64(v2, 9)
	v2 = append(v2, 0, 3)
	v2 = binary.BigEndian.AppendUint64(v2, 1234) // lastAppendMs
	v2 = append(v2, 1)
	for _, x := range []uint64{7<<32 | 8, 30, 31, 77} {
		v2 = binary.BigEndian.AppendUint64(v2, x)
	}
	v2 = binary.BigEndian.AppendUint32(v2, crc32.Checksum(v2, castagnoli))
	old, err := decodeSnapshot(v2, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := old.m[9]; e == nil || e.epoch != 3 || e.lastAppendMs != 1234 || e.txnFirst != -1 || e.coordEpoch != -1 || len(e.batches) != 1 || len(old.ongoing) != 0 {
		t.Fatalf("v2 snapshot decoded to %+v", old.m[9])
	}
}

// TestTxnLSOBelowUnreplicatedMarker: a transaction whose marker the high
// watermark has not passed stays unstable (Kafka's unreplicated
// transactions): the LSO stays at its first offset until hw is past the
// marker, then a later transaction of another producer holds it at its
// own first offset until its marker is passed in turn.
func TestTxnLSOBelowUnreplicatedMarker(t *testing.T) {
	l := newLog(t, Config{RetentionMs: -1})
	// offset 0
	mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Value: []byte("plain")}))
	txn := logtest.Options{ProducerID: 5, Idempotent: true, ProducerEpoch: 0, Attributes: attrTransactional}
	// offset 1-2
	mustAppend(t, l, logtest.Batch(txn, logtest.Record{Value: []byte("a")}, logtest.Record{Value: []byte("b")}))
	// offset 3
	if _, err := l.AppendMarker(5, 0, 0, true, -1); err != nil {
		t.Fatal(err)
	}
	other := logtest.Options{ProducerID: 6, Idempotent: true, ProducerEpoch: 0, Attributes: attrTransactional}
	// offset 4
	mustAppend(t, l, logtest.Batch(other, logtest.Record{Value: []byte("c")}))
	// offset 5
	if _, err := l.AppendMarker(6, 0, 0, false, -1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ hw, want int64 }{
		{1, 1}, // below the transaction: hw
		{3, 1}, // the COMMIT marker at 3 is not below hw
		{4, 4}, // past it; producer 6's ABORT at 5 holds at its first offset 4
		{5, 4},
		{6, 6}, // everything replicated
	} {
		if got := l.LastStableOffset(c.hw); got != c.want {
			t.Fatalf("LSO(hw %d) = %d, want %d", c.hw, got, c.want)
		}
	}
	if l.FirstUnstableOffset() != -1 {
		t.Fatalf("first unstable %d, want none ongoing", l.FirstUnstableOffset())
	}
}

// TestTxnOngoingAcrossSegmentsWithoutSnapshot: a transaction spanning
// four segments, reopened with no producer snapshot, is still ongoing
// from its first offset (the producer replay reads from the log start,
// as Kafka's does); its ABORT then hides every one of its records from
// read_committed readers, and the aborted-transaction index names its
// first offset after another reopen.
func TestTxnOngoingAcrossSegmentsWithoutSnapshot(t *testing.T) {
	cfg := Config{SegmentBytes: 300, RetentionMs: -1, RetentionBytes: -1}
	l := newLog(t, cfg)
	mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Value: []byte("p-start")}))
	txn := logtest.Options{ProducerID: 5, Idempotent: true, ProducerEpoch: 0, Attributes: attrTransactional}
	first := int64(-1)
	var plain []string
	plain = append(plain, "p-start")
	for i := 0; len(*l.segs.Load()) < 4; i++ {
		txn.BaseSequence = int32(i)
		r := mustAppend(t, l, logtest.Batch(txn, logtest.Record{Value: []byte(fmt.Sprintf("t-%d", i))}))
		if first < 0 {
			first = r.BaseOffset
		}
		v := fmt.Sprintf("p-%d", i)
		mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Value: []byte(v)}))
		plain = append(plain, v)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, e := range names {
		if strings.HasSuffix(e.Name(), snapshotSuffix) {
			if err := os.Remove(filepath.Join(l.Dir(), e.Name())); err != nil {
				t.Fatal(err)
			}
			removed++
		}
	}
	if removed == 0 {
		t.Fatal("no producer snapshot to remove: the test would not test the replay without one")
	}
	l = newLog(t, cfg, l.Dir())
	if segs := len(*l.segs.Load()); segs < 4 {
		t.Fatalf("%d segments after the reopen, want at least 4", segs)
	}
	if fu := l.FirstUnstableOffset(); fu != first {
		t.Fatalf("first unstable offset %d after a reopen without snapshots, want %d (the transaction's first batch)", fu, first)
	}
	if _, err := l.AppendMarker(5, 0, 0, false, -1); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		end := l.EndOffset()
		if lso := l.LastStableOffset(end); lso != end {
			t.Fatalf("%s: LSO %d, want the end %d", when, lso, end)
		}
		if got := readCommitted(t, l, 0, end); !equalStrings(got, plain) {
			t.Fatalf("%s: read_committed read %q, want %q", when, got, plain)
		}
		ab := l.AbortedTransactions(0, end)
		if len(ab) != 1 || ab[0].ProducerID != 5 || ab[0].FirstOffset != first || ab[0].LastOffset != end-1 {
			t.Fatalf("%s: aborted transactions %+v, want producer 5 from %d to %d", when, ab, first, end-1)
		}
	}
	check(l, "after the abort")
	check(reopen(t, l, cfg), "after another reopen")
}
