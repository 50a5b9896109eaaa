package mirror

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// scrape reads one metric's value from a /metrics endpoint.
func scrape(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestMirrorTargetDown: the target's broker stops mid-run and stays down
// until the mirror has logged that it waits; meanwhile a backlog many times
// buffer.memory builds up on the source, and the mirror's buffered bytes
// and records stay within buffer.memory and buffer.max.records and its RSS
// stays small. The broker comes back on the same port and directory: the
// run completes with nothing lost and in order.
func TestMirrorTargetDown(t *testing.T) {
	const partitions = 4
	records := 40_000
	if full() {
		records = 200_000
	}
	const bufferMemory = 4 << 20
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "events", partitions, nil)
	config := testproc.WriteProperties(t, t.TempDir(), "mirror.properties", map[string]string{
		"source.dc1.bootstrap.servers": dc1.Addr(),
		"source.dc1.zookeeper.connect": dc1.ZooKeeper(),
		"target.bootstrap.servers":     target.Addr(),
		"topics":                       "events",
		"group.id":                     "mirror-down",
		"offset.commit.interval.ms":    "500",
		"buffer.memory":                strconv.Itoa(bufferMemory),
		"buffer.max.records":           "5000",
		"metrics.listen":               "127.0.0.1:0",
		"audit.enable":                 "false",
	})
	watcher := watchCommits(t, dc1.ZooKeeper(), "mirror-down", "events", partitions)
	p := startMirror(t, config)
	metrics := p.metricsAddr(t)
	want := newProduced()
	want.pad = 2 << 10
	cl := dc1.Client(t, kgo.ProducerBatchMaxBytes(4<<20))
	big := func(from, n int) {
		// 2 KiB values: the backlog while the target is down is many
		// times buffer.memory.
		want.produce(t, cl, "dc1", "events", partitions, from, n)
	}
	big(0, records/4)
	reader := readTarget(t, target, "events")
	testenv.WaitFor(t, time.Minute, "mirroring to start", func() (bool, string) {
		got, _ := reader.counts()
		return got > 0, ""
	})

	target.Stop(t, 1)
	down := time.Now()
	big(records/4, records*3/4)
	var peakRSS int64
	var peakBytes, peakRecords float64
	testenv.WaitFor(t, time.Minute, "the mirror to log that the target does not acknowledge", func() (bool, string) {
		peakRSS = max(peakRSS, p.rssBytes(t))
		peakBytes = max(peakBytes, scrape(t, metrics, "tributary_mirror_buffered_bytes"))
		peakRecords = max(peakRecords, scrape(t, metrics, "tributary_mirror_buffered_records"))
		return strings.Contains(p.out.String(), "the target has not acknowledged anything"), ""
	})
	target.Restart(t, 1)
	t.Logf("target down for %v; mirror peak RSS %d MiB, buffered %.0f bytes / %.0f records", time.Since(down).Round(time.Second), peakRSS>>20, peakBytes, peakRecords)
	// franz-go admits the record that crosses the limit, then blocks (one
	// record per stream goroutine).
	if peakBytes > bufferMemory+64<<10 || peakRecords > 5000 {
		t.Errorf("buffered %.0f bytes / %.0f records, beyond buffer.memory=%d / buffer.max.records=5000", peakBytes, peakRecords, bufferMemory)
	}
	if peakRSS > 256<<20 {
		t.Errorf("mirror RSS reached %d MiB while the target was down", peakRSS>>20)
	}
	reader = readTarget(t, target, "events")
	reader.waitComplete(t, want, 3*time.Minute)
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("mirror exit after SIGTERM: %v\n%s", err, p.out.String())
	}
	reader.verify(t, want, func(_ string, p int32) map[int64]bool { return watcher.starts(p) })
}
