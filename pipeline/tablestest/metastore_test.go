package tablestest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs"
)

const (
	clicksV1 = `{"type":"record","name":"Click","namespace":"tablestest","fields":[{"name":"n","type":"long"},{"name":"page","type":"string"}]}`
	// clicksV2 changes n's type: the table's column n (bigint) cannot take it.
	clicksV2 = `{"type":"record","name":"Click","namespace":"tablestest","fields":[{"name":"n","type":"string"},{"name":"page","type":"string"}]}`
	viewsV1  = `{"type":"record","name":"View","namespace":"tablestest","fields":[{"name":"n","type":"long"},{"name":"page","type":"string"}]}`
)

// TestMetastoreDownThenSchemaBlocked: a loader job and a compact job
// (--tables-config on a metastore of the test's own) run by the scheduler
// over two topics into HDFS, in three phases:
//
//  1. hours 0 and 1 load, become ready and are compacted and registered
//     as Parquet partitions;
//  2. the metastore is stopped: the loader goes on (hours 2 and 3 loaded),
//     compaction marks them ready (_SUCCESS) but neither registers nor
//     swaps them, and its run fails with the metastore named in the job
//     history (error and summary's catalog_errors) and in
//     tributary_jobs_failures_total; once the metastore is back one run
//     registers and compacts them, and hours 0 and 1 are the partitions
//     created in phase 1 (same createTime: nothing registered twice);
//  3. clicks gets a schema version changing n from long to string: the run
//     fails naming clicks and n, its summary lists clicks in
//     tables_schema_blocked and tributary_jobs_tables_schema_blocked{topic=
//     "clicks"} is 1; clicks' hour 4 stays ready Avro, unregistered, while
//     views' hour 4 is registered and compacted.
//
// After every run the tables hold exactly what the files publish.
func TestMetastoreDownThenSchemaBlocked(t *testing.T) {
	t.Parallel() // mostly its own metastore starting and the scheduler's runs: beside the others
	began := time.Now()
	own := testenv.StartHiveMetastore(t, "")
	t.Logf("metastore started in %v", time.Since(began))
	r := newRig(t, "clicks", "views")
	db := fmt.Sprintf("tablestest_%d", time.Now().UnixNano())
	tablesConf := testproc.WriteProperties(t, r.dir, "tables.properties", map[string]string{
		"hive.integration": "true", "hive.metastore.uris": own.URI, "hive.database": db,
		"schema.registry.url": r.cl.RegistryURL()})
	loaderConf := testproc.WriteProperties(t, r.dir, "loader.properties", map[string]string{
		"name": "pv-loader", "bootstrap.servers": strings.Join(r.cl.Bootstrap(), ","),
		"schema.registry.url": r.cl.RegistryURL(), "topics": "clicks|views",
		"output.uri": r.baseURI, "audit.enable": "false"})
	r.startScheduler(t, fmt.Sprintf(`
jobs:
  - name: load
    schedule: "0 0 1 1 *"
    kind: loader
    args: {config: %s}
    timeout: 3m
  - name: compact
    schedule: "0 0 1 1 *"
    kind: compact
    args: {base: "%s", loader_job: pv-loader, delay: 1m, tables_config: %s}
    timeout: 3m
`, loaderConf, r.baseURI, tablesConf))
	m := r.metastore(t, own.URI, db)

	hour0 := time.Now().UTC().Truncate(time.Hour).Add(-7 * 24 * time.Hour)
	hourAt := func(h int, minute int) time.Time {
		return hour0.Add(time.Duration(h)*time.Hour + time.Duration(minute)*time.Minute)
	}
	seq := 0
	// produce writes n records into each of the given hours of topic (the
	// loader's committed watermark is then past them all: they close).
	produce := func(topic, schema string, n int, hrs ...int) {
		var ts []time.Time
		for _, h := range hrs {
			for i := range n {
				ts = append(ts, hourAt(h, i*50/n))
			}
		}
		first := seq
		seq += len(ts)
		r.produce(t, topic, schema, ts, func(i int) map[string]any {
			n := int64(first + i)
			if schema == clicksV2 {
				return map[string]any{"n": fmt.Sprint(n), "page": "/c2"}
			}
			return map[string]any{"n": n, "page": fmt.Sprintf("/%s/%d", topic, n%7)}
		})
	}
	wantStatus := func(run *jobs.Run, status jobs.Status) map[string]any {
		t.Helper()
		var sum map[string]any
		if run.Status != status || json.Unmarshal(run.Summary, &sum) != nil {
			t.Fatalf("%s run: %s (want %s), summary %s, error %s", run.Job, run.Status, status, run.Summary, run.Error)
		}
		return sum
	}

	// Phase 1.
	produce("clicks", clicksV1, 20, 0, 1)
	produce("views", viewsV1, 20, 0, 1)
	wantStatus(r.run(t, "load"), jobs.StatusSucceeded)
	wantStatus(r.run(t, "compact"), jobs.StatusSucceeded)
	before := map[string][]string{}
	for _, topic := range []string{"clicks", "views"} {
		if s := r.states(t, topic); s != "compacted compacted" {
			t.Fatalf("%s after phase 1: %s", topic, s)
		}
		for _, p := range r.checkTable(t, m, topic) {
			if p.Format != "parquet" {
				t.Fatalf("%s: partition %+v after compaction", topic, p)
			}
			before[topic] = append(before[topic], p.Value+" "+p.Created.String())
		}
	}

	// Phase 2: the metastore down.
	began = time.Now()
	own.Stop(t)
	t.Logf("metastore stopped in %v", time.Since(began))
	produce("clicks", clicksV1, 20, 2, 3)
	produce("views", viewsV1, 20, 2, 3)
	if sum := wantStatus(r.run(t, "load"), jobs.StatusSucceeded); sum["records"] != float64(2*40) {
		t.Fatalf("loader with the metastore down: summary %v, want 80 records", sum)
	}
	failures := gauge(t, r.metrics, "tributary_jobs_failures_total", map[string]string{"job": "compact"})
	run := r.run(t, "compact")
	sum := wantStatus(run, jobs.StatusFailed)
	if !strings.Contains(run.Error, "metastore unavailable") || !strings.Contains(run.Error, strings.TrimPrefix(own.URI, "thrift://")) {
		t.Fatalf("history of the failed compaction: error %q does not name the metastore", run.Error)
	}
	if errs, _ := sum["catalog_errors"].([]any); len(errs) < 2 || sum["hours_compacted"] != 0.0 {
		t.Fatalf("summary with the metastore down: %s: want catalog errors for both topics, nothing compacted", run.Summary)
	}
	if n := gauge(t, r.metrics, "tributary_jobs_failures_total", map[string]string{"job": "compact"}); n != max(failures, 0)+1 {
		t.Fatalf("tributary_jobs_failures_total{job=compact} = %v after the failed run, was %v", n, failures)
	}
	for _, topic := range []string{"clicks", "views"} {
		// Ready and queued: marked, not swapped (the catalog must learn first).
		if s := r.states(t, topic); s != "compacted compacted ready ready" {
			t.Fatalf("%s with the metastore down: %s", topic, s)
		}
	}
	began = time.Now()
	own.Start(t)
	t.Logf("metastore started again in %v", time.Since(began))
	sum = wantStatus(r.run(t, "compact"), jobs.StatusSucceeded)
	if sum["hours_compacted"] != 4.0 {
		t.Fatalf("compaction after the metastore returned: %v, want 4 hours compacted", sum)
	}
	for _, topic := range []string{"clicks", "views"} {
		if s := r.states(t, topic); s != "compacted compacted compacted compacted" {
			t.Fatalf("%s after the metastore returned: %s", topic, s)
		}
		got := r.checkTable(t, m, topic)
		for i, b := range before[topic] {
			if now := got[i].Value + " " + got[i].Created.String(); now != b {
				t.Fatalf("%s: partition %s registered again: was %s", topic, now, b)
			}
		}
	}

	// Phase 3: a type change for clicks.
	r.setCompatibility(t, "clicks-value", "NONE")
	produce("clicks", clicksV2, 20, 4)
	produce("views", viewsV1, 20, 4)
	wantStatus(r.run(t, "load"), jobs.StatusSucceeded)
	run = r.run(t, "compact")
	sum = wantStatus(run, jobs.StatusFailed)
	if !strings.Contains(run.Error, "schema change the table cannot take") || !strings.Contains(run.Error, "clicks") ||
		!strings.Contains(run.Error, "bigint") {
		t.Fatalf("history of the blocked compaction: error %q does not name the topic, the change and the types", run.Error)
	}
	if b, _ := sum["tables_schema_blocked"].([]any); fmt.Sprint(b) != "[clicks]" {
		t.Fatalf("summary %s: tables_schema_blocked %v, want [clicks]", run.Summary, sum["tables_schema_blocked"])
	}
	if v := gauge(t, r.metrics, "tributary_jobs_tables_schema_blocked", map[string]string{"job": "compact", "topic": "clicks"}); v != 1 {
		t.Fatalf("tributary_jobs_tables_schema_blocked{topic=clicks} = %v, want 1", v)
	}
	if v := gauge(t, r.metrics, "tributary_jobs_tables_schema_blocked", map[string]string{"job": "compact", "topic": "views"}); v == 1 {
		t.Fatalf("tributary_jobs_tables_schema_blocked{topic=views} = 1")
	}
	if s := r.states(t, "clicks"); s != "compacted compacted compacted compacted ready" {
		t.Fatalf("clicks, blocked: %s", s)
	}
	if s := r.states(t, "views"); s != "compacted compacted compacted compacted compacted" {
		t.Fatalf("views beside the blocked topic: %s", s)
	}
	r.checkTable(t, m, "views")
	if got, err := m.Registered(t.Context(), "clicks"); err != nil || len(got) != 4 {
		t.Fatalf("clicks, blocked: table %v (%v), want its 4 earlier partitions only", got, err)
	}
}
