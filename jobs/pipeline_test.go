package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/tailtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

const pageViewSchema = `{"type":"record","name":"PageView","namespace":"test","fields":[
 {"name":"id","type":"long"},{"name":"page","type":"string"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"ref","type":["null","string"],"default":null}]}`

// TestLoaderThenCompactOnHDFS is the pipeline's tail end to end: records
// of three hours produced to an in-process cluster are loaded into HDFS by
// a loader job and compacted by a compact job, both run by a scheduler on
// the cluster's own in-process coordination (no ZooKeeper) as child
// processes; pyarrow then reads back from the Parquet files exactly the
// records produced.
func TestLoaderThenCompactOnHDFS(t *testing.T) {
	ctx := context.Background()
	const topic, n = "pv", 600
	tail := tailtest.Start(t, tailtest.Config{Topics: []string{topic}, Partitions: 2, Prefix: "jobs-pipeline"})
	cl, kc, ser, fsys, base, baseURI := tail.Cluster, tail.Kafka, tail.Serializer, tail.FS, tail.Base, tail.BaseURI

	// Produce: record i in hour i%3 of a day last week, two partitions.
	hour0 := time.Now().UTC().Truncate(time.Hour).Add(-7 * 24 * time.Hour)
	var recs []*kgo.Record
	want := map[int64]string{}
	for i := 0; i < n; i++ {
		ts := hour0.Add(time.Duration(i%3)*time.Hour + time.Duration(i)*time.Second)
		var ref any
		if i%4 == 0 {
			ref = map[string]any{"string": fmt.Sprintf("r%d", i)}
		}
		v, err := ser.Encode(ctx, topic+"-value", pageViewSchema, map[string]any{"id": int64(i), "page": fmt.Sprintf("/p/%d", i%17), "ts": ts, "ref": ref})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: v, Timestamp: ts})
		want[int64(i)] = fmt.Sprintf("/p/%d %d %v", i%17, ts.UnixMilli(), ref != nil)
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	props := writeFile(t, dir, "loader.properties", fmt.Sprintf(
		"name=pv-loader\nbootstrap.servers=%s\nschema.registry.url=%s\ntopics=pv\noutput.uri=%s\naudit.enable=false\n",
		strings.Join(cl.Bootstrap(), ","), cl.RegistryURL(), baseURI))
	list, err := ParseConfig([]byte(fmt.Sprintf(`
jobs:
  - name: load
    schedule: %[1]s
    kind: loader
    args: {config: %[2]s}
    timeout: 2m
  - name: compact
    schedule: %[1]s
    kind: compact
    args: {base: "%[3]s", loader_job: pv-loader, delay: 1m}
    timeout: 2m
`, never, props, baseURI)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Jobs: list, ID: "inproc", Executable: testproc.Binary(t), Connect: cl.Connector(), PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(sctx) }()
	defer func() { cancel(); <-done }()
	sess, err := cl.Connector()(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	st := NewStore(sess, "", 0)

	t0 := time.Now()
	r := requestRun(t, st, "load", 2*time.Minute)
	t.Logf("loader run: %v, %s (took %v)", r.Status, r.Summary, time.Since(t0))
	var ls map[string]any
	if r.Status != StatusSucceeded || json.Unmarshal(r.Summary, &ls) != nil || ls["records"] != float64(n) || ls["files"].(float64) < 3 {
		t.Fatalf("loader run %+v (summary %s)", r, r.Summary)
	}
	t0 = time.Now()
	r = requestRun(t, st, "compact", 2*time.Minute)
	t.Logf("compact run: %v, %s (took %v)", r.Status, r.Summary, time.Since(t0))
	var cs map[string]any
	if r.Status != StatusSucceeded || json.Unmarshal(r.Summary, &cs) != nil || cs["hours_compacted"] != 3.0 || cs["records"] != float64(n) {
		t.Fatalf("compact run %+v (summary %s)", r, r.Summary)
	}

	// Read every hour back, by the reader rule, with pyarrow.
	var files []string
	for h := 0; h < 3; h++ {
		d := hours.Dir(base, topic, hour0.Add(time.Duration(h)*time.Hour))
		names, err := hours.DataFiles(fsys, d)
		if err != nil || len(names) == 0 {
			t.Fatalf("hour %d: %v %v", h, names, err)
		}
		for _, nm := range names {
			if !strings.HasSuffix(nm, ".parquet") {
				t.Fatalf("hour %d not compacted: %v", h, names)
			}
			b, err := filesys.ReadFile(fsys, path.Join(d, nm))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, fmt.Sprintf("h%d-%s", h, path.Base(nm)))
			os.WriteFile(p, b, 0o644)
			files = append(files, p)
		}
	}
	script := `
import json, sys, pyarrow.parquet as pq
out = []
for p in sys.argv[1:]:
    for r in pq.read_table(p).to_pylist():
        out.append([r["id"], "%s %d %s" % (r["page"], int(r["ts"].timestamp() * 1000), r["ref"] is not None)])
print(json.dumps(out))
`
	out, err := exec.Command(testenv.Python(t), append([]string{"-c", script}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	var rows [][2]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[int64]string{}
	for _, row := range rows {
		id := int64(row[0].(float64))
		if _, dup := got[id]; dup {
			t.Errorf("record %d read twice", id)
		}
		got[id] = strings.ReplaceAll(row[1].(string), "False", "false")
		got[id] = strings.ReplaceAll(got[id], "True", "true")
	}
	var bad []string
	for id, w := range want {
		if got[id] != w {
			bad = append(bad, fmt.Sprintf("%d: got %q want %q", id, got[id], w))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 || len(got) != n {
		t.Errorf("%d rows read back, %d differ: %v", len(got), len(bad), bad[:min(len(bad), 5)])
	}
}
