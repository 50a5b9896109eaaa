package pipeline

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/pipeline/pageview"
)

func testLogger(t *testing.T, buf *testproc.SyncBuffer) *slog.Logger {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pipeline log:\n%s", buf)
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// demoParallel is how many of the parallel tests (the three demos: the
// embedded one, the secure one and the denied mirror) run at once unless
// -test.parallel is given: all three, not GOMAXPROCS, since each mostly
// waits (its producers' rate, its audit windows closing, the scheduled
// loader's runs), each on ports and directories of its own.
const demoParallel = 3

func TestMain(m *testing.M) { os.Exit(testproc.MainParallel(m, demoParallel)) }

var summaryLine = regexp.MustCompile(`^pipeline: (\d+) produced, (\d+) mirrored, (\d+) loaded exactly once, audit complete in (\d+) of (\d+) closed windows$`)

var readinessLine = regexp.MustCompile(`^readiness: (\d+) of (\d+) partitions ready \(audit-proved\), (\d+) compacted$`)

// TestDemoEmbedded runs what `make demo` runs, shorter: the pipeline on
// embedded defaults (in-process coordination, local files) with the
// loader as a scheduled job of the jobs scheduler (a `tributary loader
// run` child process every 2 s), producers for 20 s, then the proof:
// every produced record read back from the loaded files exactly once,
// every closed audit window complete at producer, mirror and loader, and
// the summary line last, with figures that agree with the result.
func TestDemoEmbedded(t *testing.T) {
	t.Parallel()
	logs := &testproc.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out testproc.SyncBuffer
	res, err := Demo(ctx, Config{
		Dir: t.TempDir(), Rate: 100, AuditWindow: 5 * time.Second, AuditInterval: time.Second,
		LoadInterval: 2 * time.Second, LoaderScheduled: true, Executable: testproc.Binary(t),
		PartitionDuration: time.Minute, CompactInterval: 3 * time.Second,
		Logger: testLogger(t, logs),
	}, DemoOptions{Duration: 20 * time.Second, Progress: 5 * time.Second}, &out)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	// ~2 x 100/s for 20 s; a loaded 2-core machine may send fewer.
	if res.Produced < 1000 || res.Loaded != res.Produced || res.Mirrored < res.Produced {
		t.Errorf("produced %d, mirrored %d, loaded %d", res.Produced, res.Mirrored, res.Loaded)
	}
	if res.Windows < 3 || res.Complete != res.Windows {
		t.Errorf("audit: %d of %d windows complete", res.Complete, res.Windows)
	}
	var sum int64
	for _, w := range res.AuditWindows {
		sum += w.Producer
		if w.Loader != w.Producer || w.Status != "complete" {
			t.Errorf("window %v: %+v", w.Start, w)
		}
	}
	if sum != res.Produced {
		t.Errorf("the audit service's producer tier counted %d, the producers %d", sum, res.Produced)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	m := summaryLine.FindStringSubmatch(lines[len(lines)-2])
	if m == nil || m[1] != strconv.FormatInt(res.Produced, 10) || m[3] != m[1] || m[4] != m[5] {
		t.Errorf("line before the last %q; want the summary of %+v", lines[len(lines)-2], res)
	}
	// Every 1-minute partition became ready on the audit's proof and was
	// compacted, and the read-back (before and during compaction) was exact.
	r := readinessLine.FindStringSubmatch(lines[len(lines)-1])
	if r == nil || r[1] != r[2] || r[3] != r[2] || r[2] == "0" || res.Readiness == nil || strconv.Itoa(res.Readiness.Partitions) != r[2] {
		t.Errorf("last line %q; want every partition ready and compacted (%+v)", lines[len(lines)-1], res.Readiness)
	}
	for _, want := range []string{"cluster dc1", "cluster dc2", "cluster analytics", "schema registry    http://",
		"audit dashboard    http://", "scheduled job \"pageviews-hourly\"", "== audit report", "== loaded files", "{datacenter: dc"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if len(res.Readback.Sample) == 0 || res.Files == 0 {
		t.Fatalf("no files or records read back")
	}
	for _, r := range res.Readback.Sample {
		seq := r["seq"].(int64)
		want := pageview.Event(r["datacenter"].(string), r["producer"].(string), seq, r["timestamp"].(time.Time))
		if r["user"] != want["user"] || r["page"] != want["page"] {
			t.Errorf("record read back %v; want user and page of %v", r, want)
		}
	}
}
