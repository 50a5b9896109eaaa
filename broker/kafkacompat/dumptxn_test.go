package kafkacompat

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog"
	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// txnIndexLine is DumpLogSegments' line for one .txnindex entry.
var txnIndexLine = regexp.MustCompile(`producerId: (\d+) firstOffset: (\d+) lastOffset: (\d+) lastStableOffset: (\d+)`)

// markerLine is a control record of --deep-iteration: Kafka decodes our
// markers as EndTransactionMarkers.
var markerLine = regexp.MustCompile(`(?m)^\| offset: (\d+) .*endTxnMarker: (COMMIT|ABORT) coordinatorEpoch: (\d+)`)

// TestDumpLogSegmentsOnTransactions: Apache Kafka 2.8's DumpLogSegments
// reads a log with transactional batches and our COMMIT/ABORT markers
// (--deep-iteration decodes each marker with its coordinator epoch) and
// our .txnindex files (one entry per abort, with the offsets our log
// reports), over several segments.
func TestDumpLogSegmentsOnTransactions(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka28Tools(t)
	dir := filepath.Join(t.TempDir(), "txn-0")
	l, err := partlog.Open(dir, partlog.Config{SegmentBytes: 1 << 10, IndexIntervalBytes: 256, RetentionMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	var wantMarkers, wantAborts []string
	for i := range 12 {
		pid := int64(500 + i%3)
		seq := int32(i / 3 * 2)
		for j := range 2 {
			b := logtest.Batch(logtest.Options{ProducerID: pid, Idempotent: true, BaseSequence: seq + int32(j), Timestamp: now, Attributes: 0x10},
				logtest.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "txn%d-%d-%s", i, j, strings.Repeat("x", 60))})
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		commit := i%4 != 1
		r, err := l.AppendMarker(pid, 0, int32(7+i), commit, 3)
		if err != nil {
			t.Fatal(err)
		}
		typ := "ABORT"
		if commit {
			typ = "COMMIT"
		}
		wantMarkers = append(wantMarkers, fmt.Sprintf("%d %s %d", r.BaseOffset, typ, 7+i))
	}
	for _, a := range l.AbortedTransactions(0, l.EndOffset()) {
		wantAborts = append(wantAborts, fmt.Sprintf("%d %d %d %d", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	txnidx, _ := filepath.Glob(filepath.Join(dir, "*.txnindex"))
	if len(logs) < 3 || len(txnidx) == 0 || len(wantAborts) != 3 {
		t.Fatalf("%d segments, %d .txnindex files, %d aborts: want several of each", len(logs), len(txnidx), len(wantAborts))
	}
	names := func(paths []string) string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	stdout, stderr, err := runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", names(logs), "--deep-iteration", "--print-data-log")
	if err != nil || strings.Contains(stdout+stderr, "Exception") {
		t.Fatalf("DumpLogSegments --deep-iteration failed (%v):\n%s\n%s", err, stderr, problemLines(stdout))
	}
	var gotMarkers []string
	for _, m := range markerLine.FindAllStringSubmatch(stdout, -1) {
		gotMarkers = append(gotMarkers, m[1]+" "+m[2]+" "+m[3])
	}
	if !slices.Equal(gotMarkers, wantMarkers) {
		t.Fatalf("DumpLogSegments shows markers %q, want %q:\n%s", gotMarkers, wantMarkers, stdout)
	}
	if n := strings.Count(stdout, "isTransactional: true"); n != 36 {
		t.Errorf("DumpLogSegments shows %d transactional batches, want 36 (24 data, 12 control)", n)
	}

	stdout, stderr, err = runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", names(txnidx))
	if err != nil || strings.Contains(stdout+stderr, "Exception") {
		t.Fatalf("DumpLogSegments on .txnindex failed (%v):\n%s\n%s", err, stderr, stdout)
	}
	var gotAborts []string
	for _, m := range txnIndexLine.FindAllStringSubmatch(stdout, -1) {
		gotAborts = append(gotAborts, strings.Join(m[1:], " "))
	}
	if !slices.Equal(gotAborts, wantAborts) {
		t.Fatalf("DumpLogSegments reads .txnindex entries %q, want %q:\n%s", gotAborts, wantAborts, stdout)
	}
}
