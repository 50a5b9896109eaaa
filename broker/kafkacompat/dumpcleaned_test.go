package kafkacompat

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog"
	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// keyedLine is a record line of --deep-iteration --print-data-log; a
// tombstone has a key and no payload.
var keyedLine = regexp.MustCompile(`(?m)^\| offset: (\d+) .*? key: (\S+)(?: payload: (\S*))?$`)

type keyedRecord struct {
	off        int64
	key, value string
	tombstone  bool
}

// TestDumpLogSegmentsOnCleanedLog: Apache Kafka 2.8's DumpLogSegments
// (--deep-iteration, --verify-index-only, --index-sanity-check) reads a log
// our cleaner compacted (batches rebuilt with fewer records than offsets,
// segments grouped, gzip and uncompressed batches, tombstones) without a
// complaint about its batches or indexes, and shows exactly the records
// our reader serves. It reports the offset gaps as "Non-consecutive
// offsets", as it does for any compacted Kafka log.
func TestDumpLogSegmentsOnCleanedLog(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka28Tools(t)
	dir := filepath.Join(t.TempDir(), "state-0")
	cfg := partlog.Config{SegmentBytes: 8 << 10, IndexIntervalBytes: 512, RetentionMs: -1, Compact: true, MinCleanableDirtyRatio: 0.01}
	l, err := partlog.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gzip, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	now := time.Now().UnixMilli()
	// Each batch: a cold key written once (some deleted later by a
	// tombstone) and hot keys overwritten all the time, so that cleaned
	// batches keep a record or two of their ten offsets.
	write := func(from, to int) {
		for b := from; b < to; b++ {
			var rs []logtest.Record
			for j := 0; j < 10; j++ {
				k := fmt.Sprintf("hot-%d", (b*9+j)%20)
				switch {
				case j == 0:
					k = fmt.Sprintf("cold-%d", b)
				case j == 5 && b%4 == 0 && b >= 40:
					k = fmt.Sprintf("cold-%d", b-40)
				}
				rec := logtest.Record{Key: []byte(k), Value: fmt.Appendf(nil, "v%d.%d", b, j), TimestampDelta: int64(j)}
				if j == 5 && b%4 == 0 && b >= 40 {
					rec.Value = nil
					delete(model, k)
				} else {
					model[k] = string(rec.Value)
				}
				rs = append(rs, rec)
			}
			batch := logtest.Batch(logtest.Options{Timestamp: now}, rs...)
			if b%3 == 0 {
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(batch); err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				raw, _ := gzip.Compress(&buf, rb.Records)
				batch = logtest.Batch(logtest.Options{Timestamp: now, Attributes: 1, RawRecords: raw, RecordCount: rb.NumRecords}, rs...)
			}
			if _, err := l.Append(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two rounds: the second cleans the first's small cleaned segments
	// again, grouped into fewer.
	passes := 0
	for _, round := range [][2]int{{0, 300}, {300, 450}} {
		write(round[0], round[1])
		for first := passes; passes < first+100; passes++ {
			c, err := l.Cleanable()
			if err != nil {
				t.Fatal(err)
			}
			if !c.Due {
				break
			}
			if _, err := l.Clean(context.Background(), partlog.CleanOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if passes < 2 {
		t.Fatal("nothing to clean")
	}
	served := readKeyed(t, l)
	point := l.CleanerCheckpoint()
	if err := l.Close(); err != nil { // writes the active segment's index files
		t.Fatal(err)
	}
	state, seen := map[string]string{}, map[string]bool{}
	for _, r := range served {
		if r.off < point {
			if seen[r.key] {
				t.Fatalf("key %s twice below the cleaner checkpoint %d", r.key, point)
			}
			seen[r.key] = true
		}
		if r.tombstone {
			delete(state, r.key)
		} else {
			state[r.key] = r.value
		}
	}
	if fmt.Sprint(state) != fmt.Sprint(model) {
		t.Fatalf("cleaned log's state %v, the model's %v", state, model)
	}
	if len(served) >= 4500 {
		t.Fatalf("the cleaner kept %d of 4500 records", len(served))
	}

	var files []string
	for _, ext := range []string{"*.log", "*.index", "*.timeindex"} {
		m, _ := filepath.Glob(filepath.Join(dir, ext))
		for _, f := range m {
			files = append(files, filepath.Base(f))
		}
	}
	slices.Sort(files)
	list := strings.Join(files, ",")
	t.Logf("%d records kept of 4500 after %d passes, checkpoint %d: %s", len(served), passes, point, listing(dir))
	// Its offset-gap report is expected on a compacted log; every other
	// complaint is a fault.
	problems := slices.DeleteFunc(slices.Clone(dumpProblems), func(p string) bool { return p == "Non-consecutive" })
	check := func(mode, out string) {
		t.Helper()
		for _, p := range problems {
			if strings.Contains(out, p) {
				t.Errorf("DumpLogSegments %s reports %q:\n%s", mode, p, problemLines(out))
				return
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stdout, stderr, err := runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", list, "--deep-iteration", "--print-data-log")
	if err != nil {
		t.Fatalf("DumpLogSegments --deep-iteration failed (%v):\n%s", err, stderr)
	}
	check("--deep-iteration", stdout+stderr)
	var dumped []keyedRecord
	for _, m := range keyedLine.FindAllStringSubmatch(stdout, -1) {
		off, _ := strconv.ParseInt(m[1], 10, 64)
		dumped = append(dumped, keyedRecord{off: off, key: m[2], value: m[3], tombstone: !strings.Contains(m[0], " payload: ")})
	}
	if !slices.Equal(dumped, served) {
		i := 0
		for i < min(len(dumped), len(served)) && dumped[i] == served[i] {
			i++
		}
		t.Errorf("DumpLogSegments shows %d records, our reader %d; first difference at %d: %v vs %v",
			len(dumped), len(served), i, dumped[min(i, len(dumped)-1)], served[min(i, len(served)-1)])
	}
	if !strings.Contains(stderr+stdout, "Non-consecutive offsets") {
		t.Error("DumpLogSegments saw no offset gap in a compacted log")
	}
	for _, mode := range []string{"--verify-index-only", "--index-sanity-check"} {
		stdout, stderr, err := runTool(t, ctx, tools, dir, "kafka.tools.DumpLogSegments", "--files", list, mode)
		if err != nil {
			t.Errorf("DumpLogSegments %s failed (%v):\n%s", mode, err, stderr)
		}
		check(mode, stdout+stderr)
		if mode == "--index-sanity-check" {
			for _, f := range files {
				st, err := os.Stat(filepath.Join(dir, f))
				if err == nil && st.Size() > 0 && !strings.HasSuffix(f, ".log") && !strings.Contains(stdout, f+" passed sanity check.") {
					t.Errorf("--index-sanity-check does not pass %s:\n%s", f, stdout+stderr)
				}
			}
		}
	}
}

// readKeyed reads the whole log through Read, as a consumer would get it.
func readKeyed(t *testing.T, l *partlog.Log) []keyedRecord {
	t.Helper()
	dec := kgo.DefaultDecompressor()
	var out []keyedRecord
	for next := l.StartOffset(); next < l.EndOffset(); {
		v, err := l.Read(next, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b, err := v.Bytes()
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			b = b[12+int(rb.Length):]
			raw, err := dec.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
			if err != nil {
				t.Fatal(err)
			}
			for range rb.NumRecords {
				n, hdr := binary.Varint(raw)
				if hdr <= 0 || hdr+int(n) > len(raw) {
					t.Fatalf("batch %d: bad record length", rb.FirstOffset)
				}
				var r kmsg.Record
				if err := r.ReadFrom(raw[:hdr+int(n)]); err != nil {
					t.Fatal(err)
				}
				raw = raw[hdr+int(n):]
				out = append(out, keyedRecord{off: rb.FirstOffset + int64(r.OffsetDelta), key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
			}
			next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		}
	}
	return out
}
