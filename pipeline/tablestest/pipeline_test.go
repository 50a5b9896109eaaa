package tablestest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/pageview"
)

// TestPipelineTablesSpark is the demo's page-view table in Spark: the
// pipeline (two datacenters, the mirror, the loader, the audit service and
// its compaction part) runs with Config.HiveMetastoreURIs on the real
// metastore of make test, its partitions a minute long, as the demo's, so that several
// become ready within the test. The compaction part is held after each of
// its catalog syncs (Config.CompactPauseAt): while a partition is
// registered as Avro and again once every partition is compacted, Spark SQL
// 3.5 (enableHiveSupport, default settings) runs, over the table,
// `count(*)` per partition, which must equal the audit service's producer
// and loader counts of the partition's windows, and `SELECT * ... LIMIT
// 10`, whose rows must be, value by value, page views the producers made:
// every field the function of (producer, seq) that pageview.Event is, and
// the timestamp the one in the loaded Avro file, inside the row's
// partition.
func TestPipelineTablesSpark(t *testing.T) {
	t.Parallel() // its own cluster, database and table: beside the others of the package
	uri := testenv.HiveMetastore(t)
	const partition = time.Minute
	dir := t.TempDir()
	db := fmt.Sprintf("tablestest_pipeline_%d", time.Now().UnixNano())
	resume := filepath.Join(dir, "resume")
	cfg := pipeline.Config{
		Dir: dir, Brokers: 1, Partitions: 2, Rate: 15,
		AuditWindow: 10 * time.Second, AuditInterval: time.Second, LoadInterval: 2 * time.Second,
		PartitionDuration: partition,
		// Passes come from the demo's drain (Verify) only: the test holds them.
		CompactInterval:   time.Hour,
		HiveMetastoreURIs: []string{uri}, HiveDatabase: db,
		CompactPauseAt: "sync catalog " + pageview.Topic, CompactPauseFile: resume,
	}
	ctx := context.Background()
	p, err := pipeline.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var banner bytes.Buffer
	p.PrintBanner(&banner)
	table := db + "." + pageview.Topic
	for _, want := range []string{"tables             " + table + " in " + uri, "spark-sql --conf spark.sql.catalogImplementation=hive --conf spark.hadoop.hive.metastore.uris=" + uri,
		"FROM " + table + " GROUP BY hour", filepath.Join(dir, pipeline.TablesFile)} {
		if !strings.Contains(banner.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, banner.String())
		}
	}
	if p.Table() != table {
		t.Errorf("Table() = %q, want %q", p.Table(), table)
	}

	type result struct {
		res *pipeline.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := p.RunFor(ctx, pipeline.DemoOptions{Duration: 75 * time.Second, Drain: 4 * time.Minute}, io.Discard)
		done <- result{res, err}
	}()
	t.Cleanup(func() {
		// Release any held pass, then stop everything.
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
					if _, err := os.Stat(resume + ".paused"); err == nil {
						_ = os.WriteFile(resume, nil, 0o644)
					}
				}
			}
		}()
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		close(stop)
	})

	// loaded is every record's timestamp by (producer, seq), read from the
	// loaded Avro files before the first compaction.
	var loaded map[string]time.Time
	checked := map[string]bool{} // partitions checked while Avro
	var res *pipeline.Result
	last := ""
	for res == nil {
		var paused string
		testenv.WaitFor(t, 6*time.Minute, "a held compaction pass or the demo's end", func() (bool, string) {
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatalf("pipeline: %v", r.err)
				}
				res = r.res
				return true, ""
			default:
			}
			// A pass that goes on can hold again at once: a hold is its
			// file's text and time.
			b, err := os.ReadFile(resume + ".paused")
			fi, serr := os.Stat(resume + ".paused")
			if err == nil && serr == nil {
				if id := string(b) + fi.ModTime().String(); id != last {
					paused, last = string(b), id
					return true, ""
				}
			}
			return false, fmt.Sprint(err)
		})
		if res != nil {
			break
		}
		if loaded == nil {
			loaded = readLoaded(t, p)
		}
		parts, err := p.Tables().Registered(ctx, pageview.Topic)
		if err != nil {
			t.Fatal(err)
		}
		var avro []string
		for _, rp := range parts {
			if rp.Format == "avro" && !checked[rp.Value] {
				avro = append(avro, rp.Value)
			}
		}
		if len(avro) > 0 {
			t.Logf("held at %q: Avro partitions %v", strings.TrimSpace(paused), avro)
			checkSpark(t, p, uri, table, partition, avro, loaded)
			for _, v := range avro {
				checked[v] = true
			}
		}
		if err := os.WriteFile(resume, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, time.Minute, "the held pass to go on", func() (bool, string) {
			_, err := os.Stat(resume)
			return os.IsNotExist(err), fmt.Sprint(err)
		})
	}
	if res.Readiness == nil || res.Readiness.Partitions == 0 || res.Readiness.Ready != res.Readiness.Partitions ||
		res.Readiness.Compacted != res.Readiness.Partitions {
		t.Fatalf("after the demo: %v, want every partition ready and compacted", res.Readiness)
	}
	parts, err := p.Tables().Registered(ctx, pageview.Topic)
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, rp := range parts {
		if rp.Format != "parquet" {
			t.Errorf("after the demo, partition %s is %q, want parquet", rp.Value, rp.Format)
		}
		if !checked[rp.Value] {
			t.Errorf("partition %s was never seen registered as Avro", rp.Value)
		}
		values = append(values, rp.Value)
	}
	if len(parts) != res.Readiness.Partitions {
		t.Errorf("the metastore has %d partitions, the files %d", len(parts), res.Readiness.Partitions)
	}
	var printed bytes.Buffer
	res.Print(&printed, p)
	if want := fmt.Sprintf("tables: %s holds %d partitions (%d Parquet, 0 Avro); query it with\n  spark-sql ", table, len(parts), len(parts)); !strings.Contains(printed.String(), want) {
		t.Errorf("the demo's report lacks %q:\n%s", want, printed.String())
	}
	t.Logf("%s: %d records; %d partitions checked in Spark as Avro, then as Parquet", res.Summary(), res.Loaded, len(checked))
	checkSpark(t, p, uri, table, partition, values, loaded)
}

// readLoaded reads every record of the loaded files: its timestamp by
// producer/seq.
func readLoaded(t *testing.T, p *pipeline.Pipeline) map[string]time.Time {
	t.Helper()
	fsys, base := p.Output()
	files, err := hours.TopicData(fsys, base, pageview.Topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, d := range files {
		if d.Format != hours.Avro {
			t.Fatalf("%s: compacted before the first catalog sync", d.Path())
		}
		if _, err := rows.Read(fsys, d, func(m map[string]any) error {
			out[fmt.Sprintf("%v/%v", m["producer"], m["seq"])] = m["timestamp"].(time.Time)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkSpark runs, in one Spark session, count(*) per partition of values
// and SELECT * ... LIMIT 10 over them, and compares them with the audit
// service's counts and with what was produced.
func checkSpark(t *testing.T, p *pipeline.Pipeline, uri, table string, partition time.Duration, values []string, loaded map[string]time.Time) {
	t.Helper()
	windows, err := p.AuditReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]int64{}
	for _, w := range windows {
		if w.Loader != w.Producer || !w.Closed {
			t.Errorf("audit window %v: producer %d, loader %d, closed %v", w.Start, w.Producer, w.Loader, w.Closed)
		}
		if v := tables.PartitionValue(w.Start.Truncate(partition), partition); slices.Contains(values, v) {
			audited[v] += w.Producer
		}
	}
	in := "'" + strings.Join(values, "','") + "'"
	out := testenv.SparkSQL(t, uri,
		fmt.Sprintf("SELECT hour, count(*) AS n FROM %s WHERE hour IN (%s) GROUP BY hour ORDER BY hour", table, in),
		fmt.Sprintf("SELECT *, unix_millis(`timestamp`) AS ts_ms FROM %s WHERE hour IN (%s) LIMIT 10", table, in))
	counted := map[string]int64{}
	for _, row := range out[0] {
		counted[fmt.Sprint(row["hour"])] = int64(row["n"].(float64))
	}
	if fmt.Sprint(counted) != fmt.Sprint(audited) {
		t.Errorf("partitions %v: Spark counts %v, the audit %v", values, counted, audited)
	}
	if len(out[1]) != 10 {
		t.Fatalf("SELECT * ... LIMIT 10: %d rows: %v", len(out[1]), out[1])
	}
	for _, row := range out[1] {
		producer, _ := row["producer"].(string)
		seqF, _ := row["seq"].(float64)
		seq := int64(seqF)
		ts, ok := loaded[fmt.Sprintf("%s/%d", producer, seq)]
		if !ok {
			t.Errorf("Spark row %v: no such record was loaded", row)
			continue
		}
		want := pageview.Event(producer[:strings.LastIndexByte(producer, '-')], producer, seq, ts)
		ref := want["referrer"]
		if m, ok := ref.(map[string]any); ok {
			ref = m["string"]
		}
		got := fmt.Sprintf("%v %v %v %v %v %v %v", row["datacenter"], row["producer"], row["seq"], row["user"], row["page"], row["referrer"], row["ts_ms"])
		wantRow := fmt.Sprintf("%v %v %v %v %v %v %v", want["datacenter"], want["producer"], float64(seq), want["user"], want["page"], ref, float64(ts.UnixMilli()))
		if got != wantRow {
			t.Errorf("Spark row %v:\n got %s\nwant %s", row, got, wantRow)
		}
		// Python prints the timestamp in the local time zone, microseconds
		// only when there are some.
		local := ts.Local().Format("2006-01-02 15:04:05.000000")
		local = strings.TrimSuffix(local, ".000000")
		if fmt.Sprint(row["timestamp"]) != local {
			t.Errorf("Spark row %v: timestamp %v, want %s", row, row["timestamp"], local)
		}
		if v := tables.PartitionValue(ts.Truncate(partition), partition); row["hour"] != v {
			t.Errorf("Spark row %v: in partition %v, its timestamp in %s", row, row["hour"], v)
		}
	}
}
