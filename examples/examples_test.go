// Package examples_test compiles the example programs and runs them as
// separate processes against clusters of in-process brokers (brokertest),
// on the test ZooKeeper where an example coordinates through it.
package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/pipeline/pageview"
	"github.com/tributary/tributary/schema"
)

// brokers is the size of the test clusters.
const brokers = 3

// newRegistry serves a schema registry on an in-memory store until the
// test ends and returns its URL.
func newRegistry(t *testing.T) string {
	t.Helper()
	return registrytest.Serve(t)
}

// build compiles an example into a temporary directory.
func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "./"+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./%s: %v\n%s", pkg, err, out)
	}
	return bin
}

// TestProducerAndConsumerGroupExamples: on three brokers sharing a
// ZooKeeper chroot, a 3-partition topic with one partition led by each;
// the producer example writes 50 keyed messages; the consumer-group
// example, coordinated through the same chroot, prints all of them, each in
// the partition its key hashes to.
func TestProducerAndConsumerGroupExamples(t *testing.T) {
	producer, consumer := build(t, "producer"), build(t, "consumergroup")
	c := brokertest.NewCluster(t, brokers, brokertest.ZooKeeper(), brokertest.Partitions(3))
	zk := c.ZooKeeper()
	bootstrap := strings.Join(c.Addrs(), ",")
	const n = 50

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leaders := c.CreateTopic(t, "events", 3)
	if spread := slices.Sorted(maps.Values(leaders)); !slices.Equal(spread, []int32{1, 2, 3}) {
		t.Fatalf("leaders %v, want one partition on each broker", leaders)
	}
	out, err := exec.CommandContext(ctx, producer, "--bootstrap", bootstrap, "--topic", "events", "--count", fmt.Sprint(n)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("sent %d messages to events", n)) {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, consumer, "--bootstrap", bootstrap, "--zookeeper", zk, "--group", "printers",
		"--topic", "events", "--streams", "2", "--count", fmt.Sprint(n))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("consumergroup: %v\nstderr:\n%s", err, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var p, off int
		var key, value string
		if _, err := fmt.Sscanf(line, "%d %d %s %s", &p, &off, &key, &value); err != nil {
			t.Fatalf("consumergroup printed %q: %v", line, err)
		}
		if want := client.KeyPartition([]byte(key), 3); p != want {
			t.Errorf("%s came from partition %d, murmur2 says %d", key, p, want)
		}
		got[key] = value
	}
	for i := range n {
		k := fmt.Sprintf("key-%d", i)
		if got[k] != fmt.Sprintf("message-%d", i) {
			t.Errorf("%s: printed value %q", k, got[k])
		}
	}
	if len(got) != n {
		t.Errorf("printed %d distinct keys, want %d", len(got), n)
	}
}

// TestPageViewsExample: the pageviews example writes 300 page views to a
// 3-broker in-process cluster and a schema registry; read back, every
// record is framed with the id the registry gives the page-view schema
// under "pageviews-value", decodes to exactly the event seq i would be,
// is keyed by its user, stamped with its event time, and appears once.
func TestPageViewsExample(t *testing.T) {
	bin := build(t, "pageviews")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, registryURL := brokertest.NewCluster(t, brokers, brokertest.Partitions(3)), newRegistry(t)
	const n = 300
	c.CreateTopic(t, "pageviews", 3)
	out, err := exec.CommandContext(ctx, bin, "--bootstrap", strings.Join(c.Addrs(), ","), "--registry", registryURL,
		"--datacenter", "dc7", "--count", strconv.Itoa(n), "--rate", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("pageviews: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`^sent 300 page views to pageviews as (dc7-[0-9a-f]{8}) \(schema id (\d+)\)\n$`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("pageviews printed %q", out)
	}
	producer := m[1]
	reg, err := serde.NewRegistryClient(serde.ClientConfig{URL: registryURL})
	if err != nil {
		t.Fatal(err)
	}
	id, err := reg.Register(ctx, "pageviews-value", pageview.Schema)
	if err != nil || strconv.Itoa(id) != m[2] {
		t.Fatalf("registry id of the page-view schema: %d, %v; the example printed %s", id, err, m[2])
	}

	cl := c.Client(t, kgo.ConsumeTopics("pageviews"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	de := serde.NewDeserializer(reg)
	seen := map[int64]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d page views: %v", len(seen), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			gotID, _, err := schema.Parse(r.Value)
			if err != nil || int(gotID) != id {
				t.Fatalf("offset %d/%d: frame id %d, %v; want %d", r.Partition, r.Offset, gotID, err, id)
			}
			v, _, err := de.Decode(ctx, r.Value)
			if err != nil {
				t.Fatalf("decode %d/%d: %v", r.Partition, r.Offset, err)
			}
			got := v.(map[string]any)
			seq := got["seq"].(int64)
			ts := got["timestamp"].(time.Time)
			if want := pageview.Event("dc7", producer, seq, ts); !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Fatalf("record %d: %v, want %v", seq, got, want)
			}
			if string(r.Key) != got["user"] || !r.Timestamp.Equal(ts) {
				t.Fatalf("record %d: key %q timestamp %v; want key %v and the event time %v", seq, r.Key, r.Timestamp, got["user"], ts)
			}
			if want := client.KeyPartition(r.Key, 3); int(r.Partition) != want {
				t.Fatalf("record %d in partition %d, murmur2 says %d", seq, r.Partition, want)
			}
			if seq < 0 || seq >= n || seen[seq] {
				t.Fatalf("record %d: out of range or seen twice", seq)
			}
			seen[seq] = true
		})
	}
}

// TestReadLoadedExample: page views written by the pageviews example and
// loaded by the loader into a directory are printed back by the readloaded
// example, one JSON object per record, each seq exactly once, skipping the
// loader's own state under _loader.
func TestReadLoadedExample(t *testing.T) {
	producer, reader := build(t, "pageviews"), build(t, "readloaded")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, registryURL := brokertest.New(t, brokertest.Partitions(2)), newRegistry(t)
	c.CreateTopic(t, "pageviews", 2)
	const n = 120
	if out, err := exec.CommandContext(ctx, producer, "--bootstrap", c.Addr(), "--registry", registryURL,
		"--count", strconv.Itoa(n), "--rate", "0").CombinedOutput(); err != nil {
		t.Fatalf("pageviews: %v\n%s", err, out)
	}
	outDir := t.TempDir()
	l, err := loader.New(ctx, loader.Config{Name: "examples", Brokers: c.Addrs(), RegistryURL: registryURL,
		Topics: "pageviews", OutputURI: outDir, AuditDisable: true})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(ctx)
	_ = l.Close()
	if err != nil || sum.Records != n {
		t.Fatalf("loader run: %+v, %v", sum, err)
	}
	out, err := exec.CommandContext(ctx, reader, "--dir", outDir).Output()
	if err != nil {
		t.Fatalf("readloaded: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^read 120 records from \d+ files$`).MatchString(last) {
		t.Fatalf("last line %q", last)
	}
	loaded := readLoadedLines(t, lines, n)

	// Compact every hour (the real compaction, all hours closed), then the
	// same records must be printed back, now read from Parquet.
	cmp, err := compact.New(compact.Config{FS: filesys.Local(), Base: outDir,
		ClosedThrough: func(context.Context) (time.Time, error) { return time.Now().Add(3 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := cmp.Run(ctx); err != nil || sum.HoursCompacted == 0 || sum.Records != n {
		t.Fatalf("compaction: %+v, %v", sum, err)
	}
	files, err := hours.TopicData(filesys.Local(), outDir, "pageviews")
	if err != nil || len(files) == 0 {
		t.Fatalf("data files after compaction: %v, %v", files, err)
	}
	for _, f := range files {
		if f.Format != hours.Parquet {
			t.Fatalf("%s is not compacted", f.Path())
		}
	}
	out, err = exec.CommandContext(ctx, reader, "--dir", filepath.Join(outDir, "pageviews")).Output()
	if err != nil {
		t.Fatalf("readloaded after compaction: %v\n%s", err, out)
	}
	lines = strings.Split(strings.TrimSpace(string(out)), "\n")
	if last, want := lines[len(lines)-1], fmt.Sprintf("read %d records from %d files", n, len(files)); last != want {
		t.Fatalf("last line %q, want %q", last, want)
	}
	compacted := readLoadedLines(t, lines, n)
	for seq, line := range loaded {
		if compacted[seq] != line {
			t.Errorf("seq %d: read from Avro %s, from Parquet %s", seq, line, compacted[seq])
		}
	}
}

// readLoadedLines checks readloaded's record lines (all but the last, the
// count): each a page view, each of seqs 0..n-1 once. It returns the
// lines by seq.
func readLoadedLines(t *testing.T, lines []string, n int) map[int64]string {
	t.Helper()
	seen := map[int64]string{}
	for _, line := range lines[:len(lines)-1] {
		var v struct {
			Seq       int64  `json:"seq"`
			User      string `json:"user"`
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, v.Timestamp); err != nil || v.User != pageview.User(v.Seq) || seen[v.Seq] != "" {
			t.Fatalf("line %q: bad timestamp (%v), wrong user or seen twice", line, err)
		}
		seen[v.Seq] = line
	}
	if len(seen) != n {
		t.Fatalf("printed %d distinct seqs, want %d", len(seen), n)
	}
	return seen
}

// normalize makes decoded and built page views comparable: times in UTC.
func normalize(v map[string]any) map[string]any {
	out := maps.Clone(v)
	out["timestamp"] = v["timestamp"].(time.Time).UTC()
	return out
}
