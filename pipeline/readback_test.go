package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/pipeline/pageview"
)

// writeOCF writes page views (producer, seqs) as one Avro container file.
func writeOCF(t *testing.T, name, producer string, seqs ...int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: f, Schema: pageview.Schema, CompressionName: "deflate"})
	if err != nil {
		t.Fatal(err)
	}
	var recs []any
	for _, s := range seqs {
		recs = append(recs, pageview.Event("dc1", producer, s, time.UnixMilli(1_700_000_000_000+s)))
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
}

// loaderFile is the name the loader gives a page-view file.
func loaderFile(partition int32, first, last int64) string {
	return hours.LoaderFile{Topic: "pageviews", Partition: partition, First: first, Last: last, SchemaID: 1, Format: hours.Avro}.Name()
}

// TestReadLoadedExactlyOnce: files in the loader's layout are read back
// record by record; "_" directories (loader state, errors) are skipped;
// a missing, a duplicated, a never-sent and an unknown producer's record
// are each reported, and a failed send may be absent.
func TestReadLoadedExactlyOnce(t *testing.T) {
	base := t.TempDir()
	hour := hours.Dir(base, "pageviews", time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC))
	writeOCF(t, filepath.Join(hour, loaderFile(0, 0, 2)), "dc1-a", 0, 1, 2)
	writeOCF(t, filepath.Join(hour, loaderFile(1, 0, 1)), "dc1-a", 3, 5)
	writeOCF(t, filepath.Join(base, "pageviews", "_tmp", "x.avro"), "dc1-a", 0) // not data
	writeOCF(t, filepath.Join(base, "_loader", "job", "y.avro"), "dc1-a", 0)    // not even the topic
	ctx := context.Background()
	fsys := filesys.Local()
	rb, err := ReadLoaded(ctx, fsys, base, "pageviews")
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Files) != 2 || rb.Records != 5 || len(rb.Sample) != 5 || rb.Sample[0]["seq"] != int64(0) {
		t.Fatalf("files %v, records %d, sample %v", rb.Files, rb.Records, rb.Sample)
	}
	// seq 4 failed: absent is fine.
	n, err := rb.CheckExactlyOnce([]ProducerStats{{Producer: "dc1-a", Sent: 6, Acked: 5, Failed: 1, FailedSeqs: []int64{4}}})
	if err != nil || n != 5 {
		t.Fatalf("exactly once: %d, %v", n, err)
	}
	// Without the failure, seq 4 is missing.
	if _, err := rb.CheckExactlyOnce([]ProducerStats{{Producer: "dc1-a", Sent: 6, Acked: 6}}); !errors.Is(err, ErrNotExactlyOnce) ||
		!strings.Contains(err.Error(), "dc1-a: 1 records missing (first seqs [4])") {
		t.Fatalf("missing seq 4: %v", err)
	}
	// Only 5 sent: seq 5 was never sent.
	if _, err := rb.CheckExactlyOnce([]ProducerStats{{Producer: "dc1-a", Sent: 5, Acked: 4, FailedSeqs: []int64{4}}}); err == nil ||
		!strings.Contains(err.Error(), "seq 5 loaded but never sent") {
		t.Fatalf("never sent: %v", err)
	}
	writeOCF(t, filepath.Join(hour, loaderFile(2, 0, 1)), "dc1-a", 2)
	writeOCF(t, filepath.Join(hour, loaderFile(3, 0, 0)), "dc2-b", 0)
	rb, err = ReadLoaded(ctx, fsys, base, "pageviews")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rb.CheckExactlyOnce([]ProducerStats{{Producer: "dc1-a", Sent: 6, Acked: 5, FailedSeqs: []int64{4}}})
	for _, want := range []string{"dc1-a: 1 records loaded more than once (first seqs [2])", "1 records of unknown producer dc2-b"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if rb.Duplicates() != 1 {
		t.Errorf("duplicates %d, want 1", rb.Duplicates())
	}
	if empty, err := ReadLoaded(ctx, fsys, t.TempDir(), "pageviews"); err != nil || empty.Records != 0 {
		t.Errorf("nothing loaded yet: %v, %v", empty, err)
	}
}

// TestReadLoadedCompacted: after the real compaction turned an hour into
// Parquet, ReadLoaded reads the same records from it, plus a late Avro
// file that landed after the compaction, each exactly once.
func TestReadLoadedCompacted(t *testing.T) {
	ctx := context.Background()
	fsys, base := filesys.Local(), t.TempDir()
	start := time.UnixMilli(1_700_000_000_000).UTC().Truncate(time.Hour)
	hour := hours.Dir(base, "pageviews", start)
	writeOCF(t, filepath.Join(hour, loaderFile(0, 0, 2)), "dc1-a", 0, 1, 2)
	writeOCF(t, filepath.Join(hour, loaderFile(1, 0, 2)), "dc1-a", 3, 4, 5)
	before, err := ReadLoaded(ctx, fsys, base, "pageviews")
	if err != nil || before.Records != 6 {
		t.Fatalf("before compaction: %+v, %v", before, err)
	}
	c, err := compact.New(compact.Config{FS: fsys, Base: base,
		ClosedThrough: func(context.Context) (time.Time, error) { return start.Add(2 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := c.Run(ctx); err != nil || sum.HoursCompacted != 1 || sum.Records != 6 {
		t.Fatalf("compaction: %+v, %v", sum, err)
	}
	writeOCF(t, filepath.Join(hour, loaderFile(0, 3, 3)), "dc1-a", 6) // late
	rb, err := ReadLoaded(ctx, fsys, base, "pageviews")
	if err != nil {
		t.Fatal(err)
	}
	var parquet int
	for _, f := range rb.Files {
		if strings.HasSuffix(f.Path, hours.Parquet.Ext()) {
			parquet++
		}
	}
	if rb.Records != 7 || len(rb.Files) != 2 || parquet != 1 {
		t.Fatalf("after compaction: %d records from %+v, want 7 from one Parquet and one late Avro file", rb.Records, rb.Files)
	}
	if n, err := rb.CheckExactlyOnce([]ProducerStats{{Producer: "dc1-a", Sent: 7, Acked: 7}}); err != nil || n != 7 {
		t.Fatalf("exactly once: %d, %v", n, err)
	}
	for i, m := range rb.Sample {
		if want := pageview.Event("dc1", "dc1-a", m["seq"].(int64), m["timestamp"].(time.Time)); !samePageView(m, want) {
			t.Errorf("sample %d: %v, want %v", i, m, want)
		}
	}
}

// samePageView compares a page view read back (plain values: the union
// unwrapped) with the native value it was written from.
func samePageView(got, want map[string]any) bool {
	ref := want["referrer"]
	if u, ok := ref.(map[string]any); ok {
		ref = u["string"]
	}
	for _, k := range []string{"datacenter", "producer", "seq", "user", "page"} {
		if got[k] != want[k] {
			return false
		}
	}
	return got["referrer"] == ref && got["timestamp"].(time.Time).Equal(want["timestamp"].(time.Time))
}
