package partlog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// TestCleanerTransactions: compaction of a log with committed and aborted
// transactions and plain records keeps the latest committed value of each
// key and drops aborted data (physically: not even a read_uncommitted
// reader sees it). Markers stay while their transaction has data and for
// delete.retention.ms after; past it the emptied transactions' markers go,
// an ABORT's aborted-transaction entry with it, and what a read_committed
// reader gets is unchanged. Nothing past the last stable offset is cleaned.
func TestCleanerTransactions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		retention   time.Duration
		markersStay bool
	}{{"markers kept for delete.retention.ms", 0, true}, {"markers dropped past delete.retention.ms", -1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{SegmentBytes: 600, RetentionMs: -1, Compact: true, MinCleanableDirtyRatio: 0.01, DeleteRetention: tc.retention}
			l := newLog(t, cfg)
			seqs := map[int64]int32{}
			write := func(pid int64, txn bool, kvs ...string) {
				var rs []logtest.Record
				for _, kv := range kvs {
					k, _, _ := strings.Cut(kv, "=")
					rs = append(rs, logtest.Record{Key: []byte(k), Value: []byte(kv)})
				}
				o := logtest.Options{}
				if pid >= 0 {
					o = logtest.Options{ProducerID: pid, Idempotent: true, BaseSequence: seqs[pid]}
					seqs[pid] += int32(len(kvs))
				}
				if txn {
					o.Attributes = attrTransactional
				}
				mustAppend(t, l, logtest.Batch(o, rs...))
			}
			marker := func(pid int64, commit bool) {
				if _, err := l.AppendMarker(pid, 0, 0, commit, -1); err != nil {
					t.Fatal(err)
				}
			}
			filler := 0
			fill := func(n int) {
				for range n {
					write(-1, false, fmt.Sprintf("f%d=%d", filler%3, filler))
					filler++
				}
			}
			write(1, true, "k0=a1", "k1=a1", "k2=a1", "k3=a1")
			write(2, true, "k0=b-aborted", "k4=b-aborted")
			write(-1, false, "k5=p")
			marker(2, false)
			marker(1, true)
			write(1, true, "k0=a2", "k1=a2")
			marker(1, true)
			write(3, true, "k6=c-aborted")
			marker(3, false) // an abort whose data a later pass finds gone
			fill(20)
			committed := func() map[string]string {
				m := map[string]string{}
				for _, v := range readCommitted(t, l, l.StartOffset(), l.LastStableOffset(l.EndOffset())) {
					k, _, _ := strings.Cut(v, "=")
					m[k] = v
				}
				return m
			}
			before := committed()
			if before["k0"] != "k0=a2" || before["k4"] != "" || before["k3"] != "k3=a1" {
				t.Fatalf("before cleaning, read_committed sees %v", before)
			}
			if cleanAll(t, l, 0) == 0 {
				t.Fatal("nothing cleaned")
			}
			if mid := committed(); fmt.Sprint(mid) != fmt.Sprint(before) {
				t.Fatalf("read_committed after the first cleaning %v, before %v", mid, before)
			}
			fill(20) // a second pass walks the cleaned segments again
			before = committed()
			cleanAll(t, l, 0)
			after := committed()
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("read_committed after cleaning %v, before %v", after, before)
			}
			var all []string
			markers := 0
			for _, r := range readKeyed(t, l) {
				all = append(all, r.value)
				if len(r.key) == 4 && r.key[:2] == "\x00\x00" {
					markers++
				}
			}
			joined := strings.Join(all, " ")
			if strings.Contains(joined, "aborted") || strings.Contains(joined, "k0=a1") {
				t.Fatalf("aborted or superseded data left after cleaning: %s", joined)
			}
			if !strings.Contains(joined, "k3=a1") || !strings.Contains(joined, "k5=p") {
				t.Fatalf("committed data lost: %s", joined)
			}
			aborted := l.AbortedTransactions(0, l.EndOffset())
			if tc.markersStay {
				if markers != 4 || len(aborted) != 2 {
					t.Fatalf("%d markers and aborted %+v kept, want all 4 and both aborts within delete.retention.ms", markers, aborted)
				}
				return
			}
			// The committed transaction with data left keeps its marker;
			// the rest had no data left and are past the horizon.
			if markers != 2 || len(aborted) != 0 {
				t.Fatalf("%d markers and aborted %+v left, want the 2 commits of producer 1 only", markers, aborted)
			}
			l = reopen(t, l, cfg)
			if got := l.AbortedTransactions(0, l.EndOffset()); len(got) != 0 {
				t.Fatalf("aborted transactions back after reopen: %+v", got)
			}
		})
	}
}

// TestCleanerStopsAtLastStableOffset: an ongoing transaction's segment and
// everything after it stay dirty.
func TestCleanerStopsAtLastStableOffset(t *testing.T) {
	l := newLog(t, Config{SegmentBytes: 300, RetentionMs: -1, Compact: true, MinCleanableDirtyRatio: 0.01})
	for i := range 10 {
		mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)}))
	}
	mustAppend(t, l, logtest.Batch(logtest.Options{ProducerID: 9, Idempotent: true, Attributes: attrTransactional},
		logtest.Record{Key: []byte("k"), Value: []byte("open")}))
	first := l.LastStableOffset(l.EndOffset())
	for i := range 10 {
		mustAppend(t, l, logtest.Batch(logtest.Options{}, logtest.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "w%d", i)}))
	}
	cleanAll(t, l, 0)
	if p := l.CleanerCheckpoint(); p > first {
		t.Fatalf("cleaner checkpoint %d past the first unstable offset %d", p, first)
	}
	found := false
	for _, r := range readKeyed(t, l) {
		found = found || r.value == "open"
	}
	if !found {
		t.Fatal("the ongoing transaction's record was cleaned")
	}
}
