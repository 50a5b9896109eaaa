package tablestest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/pipeline/pageview"
)

// TestSparkCountsDuringSwap: page views of two datacenters' producers in
// three hours are loaded into HDFS and compacted by `tributary jobs
// compact --tables-config` (the real metastore of make test), which is
// held (EnvPauseAt) after the commit of each hour's swap. While it is held
// after the second hour's commit (its Parquet generation committed, the
// metastore not yet switched), Spark SQL runs `SELECT hour, count(*),
// count(DISTINCT (datacenter, producer, seq))` over the table: the first
// hour reads as Parquet, the second mid-swap and the third as Avro, and
// each shows exactly the records produced into it, each once. With
// TRIBUTARY_FULL=1 the query runs again after the compaction, every hour
// Parquet.
func TestSparkCountsDuringSwap(t *testing.T) {
	t.Parallel() // its own cluster, database and table: beside the others of the package
	uri := testenv.HiveMetastore(t)
	r := newRig(t, pageview.Topic)
	hour0 := time.Now().UTC().Truncate(time.Hour).Add(-6 * 24 * time.Hour)
	want := map[string]int{}
	for _, dc := range []string{"dc1", "dc2"} {
		producer := pageview.NewProducerID(dc)
		var ts []time.Time
		for h := range 3 {
			n := 10 + 5*h
			if dc == "dc2" {
				n = 8 + 3*h
			}
			for i := range n {
				ts = append(ts, hour0.Add(time.Duration(h)*time.Hour+time.Duration(i*59/n)*time.Minute))
			}
			want[tables.PartitionValue(hour0.Add(time.Duration(h)*time.Hour), time.Hour)] += n
		}
		r.produce(t, pageview.Topic, pageview.Schema, ts, func(i int) map[string]any {
			return pageview.Event(dc, producer, int64(i), ts[i])
		})
	}
	loaderConf := testproc.WriteProperties(t, r.dir, "loader.properties", map[string]string{
		"name": "pv-loader", "bootstrap.servers": strings.Join(r.cl.Bootstrap(), ","),
		"schema.registry.url": r.cl.RegistryURL(), "topics": pageview.Topic, "output.uri": r.baseURI, "audit.enable": "false"})
	bin := testproc.Binary(t)
	if out, err := exec.Command(bin, "loader", "run", "--config", loaderConf, "--log-level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("loader run: %v\n%s", err, out)
	}
	db := fmt.Sprintf("tablestest_swap_%d", time.Now().UnixNano())
	tablesConf := testproc.WriteProperties(t, r.dir, "tables.properties", map[string]string{
		"hive.integration": "true", "hive.metastore.uris": uri, "hive.database": db,
		"schema.registry.url": r.cl.RegistryURL()})
	pause := filepath.Join(r.dir, "resume")
	cmd := exec.Command(bin, "jobs", "compact", "--base", r.baseURI, "--closed-through", hour0.Add(4*time.Hour).Format(time.RFC3339),
		"--delay", "1m", "--tables-config", tablesConf, "--log-level", "warn")
	cmd.Env = append(os.Environ(), compact.EnvPauseAt+"=commit _compacted:"+pause)
	var out testproc.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("compaction's output:\n%s", out.String())
		}
	})
	last := ""
	// held waits for the compaction's next pause and returns its step.
	held := func() string {
		t.Helper()
		testenv.WaitFor(t, 5*time.Minute, "compaction held after a commit", func() (bool, string) {
			b, err := os.ReadFile(pause + ".paused")
			if err == nil && string(b) != last {
				last = string(b)
				return true, ""
			}
			return false, fmt.Sprintf("%v; output: %.500s", err, out.String())
		})
		return strings.TrimSpace(last)
	}
	resume := func() {
		t.Helper()
		if err := os.WriteFile(pause, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	query := fmt.Sprintf("SELECT hour, count(*) AS n, count(DISTINCT (datacenter, producer, seq)) AS d FROM %s.%s GROUP BY hour ORDER BY hour",
		db, pageview.Topic)
	checkCounts := func(stage string, rows []map[string]any) {
		t.Helper()
		got := map[string]int{}
		for _, row := range rows {
			n, d := row["n"].(float64), row["d"].(float64)
			if n != d {
				t.Errorf("%s: hour %v: %v rows but %v distinct (datacenter, producer, seq)", stage, row["hour"], n, d)
			}
			got[fmt.Sprint(row["hour"])] = int(n)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: Spark counts %v, want the records produced per hour %v", stage, got, want)
		}
	}

	t.Logf("held after the first hour's commit: %s", held())
	resume()
	t.Logf("held after the second hour's commit: %s", held())
	m := r.metastore(t, uri, db)
	parts, err := m.Registered(t.Context(), pageview.Topic)
	if err != nil {
		t.Fatal(err)
	}
	var formats []string
	for _, p := range parts {
		formats = append(formats, p.Format)
	}
	// Hour 1 is committed on HDFS but still Avro in the metastore.
	if strings.Join(formats, " ") != "parquet avro avro" {
		t.Fatalf("mid-swap the metastore has %+v, want the first hour Parquet, the others Avro", parts)
	}
	checkCounts("during the second hour's swap", testenv.SparkSQL(t, uri, query)[0])
	resume()
	held()
	resume()
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("compaction: %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("compaction did not end")
	}
	r.checkTable(t, m, pageview.Topic)
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		checkCounts("after the compaction", testenv.SparkSQL(t, uri, query)[0])
	}
}
