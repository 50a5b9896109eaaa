package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/jobs/compact"
)

// TestLoaderHoursCommand loads two past hours and the current one, and
// lists them with `tributary loader hours` before and after `tributary
// jobs compact --catalog-file`: waiting-for-audit, then compacted and in
// the catalog; the current hour loading throughout.
func TestLoaderHoursCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newLoaderFixture(t)
	f.broker.CreateTopic(t, "views", 1)
	const sch = `{"type":"record","name":"View","fields":[{"name":"n","type":"long"}]}`
	now := time.Now().UTC()
	past := now.Truncate(time.Hour).Add(-3 * time.Hour)
	for i := range 30 {
		ts := past.Add(time.Duration(i) * 4 * time.Minute) // two past hours, then now
		if i >= 20 {
			ts = now
		}
		f.produce(ctx, t, "views", sch, map[string]any{"n": int64(i)}, ts)
	}
	out := t.TempDir()
	conf := f.writeProps(t, "loader.properties", f.loaderProps("views", out))
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, "", args...).stdout
	}
	hoursJSON := func() []compact.HourReport {
		t.Helper()
		var rep []compact.HourReport
		if err := json.Unmarshal([]byte(run("loader", "hours", "--config", conf, "--topic", "views", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	run("loader", "run", "--config", conf, "--log-level", "warn")
	states := func(rep []compact.HourReport) string {
		var s []string
		for _, r := range rep {
			s = append(s, r.State)
		}
		return strings.Join(s, " ")
	}
	if rep := hoursJSON(); states(rep) != "waiting-for-audit waiting-for-audit loading" || rep[0].Files != 1 || rep[0].Format != "avro" {
		t.Fatalf("before compaction: %s %+v", states(rep), rep)
	}
	catalog := filepath.Join(f.dir, "catalog.json")
	run("jobs", "compact", "--base", out, "--loader-job", "hourly", "--delay", "1m", "--catalog-file", catalog, "--log-level", "warn")
	rep := hoursJSON()
	if states(rep) != "compacted compacted loading" || rep[1].Format != "parquet" || !strings.HasSuffix(rep[1].Location, ".c1") {
		t.Fatalf("after compaction: %s %+v", states(rep), rep)
	}
	cat, err := compact.ReadFileCatalog(catalog)
	if err != nil || len(cat["views"]) != 2 || cat["views"][1].Location != rep[1].Location {
		t.Fatalf("catalog %+v, %v", cat, err)
	}
	table := run("loader", "hours", "--config", conf, "--topic", "views")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "PARTITION") || !strings.Contains(lines[1], "compacted") ||
		!strings.Contains(lines[1], past.Format("views/2006/01/02/15")) || !strings.Contains(lines[3], "loading") {
		t.Fatalf("table:\n%s", table)
	}
}

// TestJobsCompactRegistersHiveTables: `tributary jobs compact
// --tables-config` (kafka-connect-hdfs's hive.* keys) registers the hours
// it publishes in the real Hive Metastore of make test, and Spark SQL
// reads through the table exactly what was produced into each hour: the
// closed hours as Parquet partitions after compaction. `jobs retention
// --tables-config` then drops the expired hour's partition with its files.
func TestJobsCompactRegistersHiveTables(t *testing.T) {
	metastore := testenv.HiveMetastore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := newLoaderFixture(t)
	f.broker.CreateTopic(t, "views", 1)
	const sch = `{"type":"record","name":"View","fields":[{"name":"n","type":"long"},{"name":"page","type":"string"}]}`
	now := time.Now().UTC()
	// Hour A ended 3 to 4 hours ago (past retention's 150 minutes), hour B
	// 1 to 2 hours ago (kept), whatever the minute now.
	past := now.Truncate(time.Hour).Add(-4 * time.Hour)
	hourB := now.Truncate(time.Hour).Add(-2 * time.Hour)
	want := map[string][2]int64{} // hour partition value -> count, sum of n
	for i := range 40 {
		ts := past.Add(time.Duration(i) * 4 * time.Minute) // 15 records in hour A
		switch {
		case i >= 35:
			ts = now // the current hour: loading, never registered
		case i >= 15:
			ts = hourB.Add(time.Duration(i-15) * 3 * time.Minute) // 20 in hour B
		}
		f.produce(ctx, t, "views", sch, map[string]any{"n": int64(i), "page": fmt.Sprintf("/p/%d", i)}, ts)
		if i < 35 {
			h := ts.Truncate(time.Hour).Format("2006-01-02-15")
			w := want[h]
			want[h] = [2]int64{w[0] + 1, w[1] + int64(i)}
		}
	}
	out := t.TempDir()
	conf := f.writeProps(t, "loader.properties", f.loaderProps("views", out))
	db := fmt.Sprintf("trib_cmd_%d", time.Now().UnixNano())
	tablesConf := f.writeProps(t, "tables.properties", map[string]string{
		"hive.integration": "true", "hive.metastore.uris": metastore, "hive.database": db,
		"schema.registry.url": f.registryURL})
	run := func(args ...string) {
		t.Helper()
		// The metastore's first calls may be slow on a busy machine.
		if res := runCLI(t, 3*time.Minute, "", args...); res.err != nil {
			t.Fatalf("tributary %s: %v\nstderr: %s", strings.Join(args, " "), res.err, res.stderr)
		}
	}
	run("loader", "run", "--config", conf, "--log-level", "warn")
	run("jobs", "compact", "--base", out, "--loader-job", "hourly", "--delay", "1m", "--tables-config", tablesConf, "--log-level", "warn")
	// Hour A is past retention's age: its partition goes with its files.
	run("jobs", "retention", "--base", out, "--max-age", "150m", "--tables-config", tablesConf, "--log-level", "warn")
	oldest := past.Format("2006-01-02-15")
	kept := map[string][2]int64{}
	for h, w := range want {
		if h != oldest {
			kept[h] = w
		}
	}
	rows := testenv.SparkSQL(t, metastore,
		fmt.Sprintf("SHOW PARTITIONS %s.views", db),
		fmt.Sprintf("SELECT hour, count(*) AS n, sum(n) AS s, count(DISTINCT page) AS d FROM %s.views GROUP BY hour ORDER BY hour", db),
		fmt.Sprintf("DROP DATABASE %s CASCADE", db))
	if len(rows[0]) != len(kept) {
		t.Errorf("partitions %v, want the %d hours kept (%v)", rows[0], len(kept), kept)
	}
	got := map[string][2]int64{}
	for _, r := range rows[1] {
		n, s, d := r["n"].(float64), r["s"].(float64), r["d"].(float64)
		if n != d {
			t.Errorf("hour %v: %v rows, %v distinct pages", r["hour"], n, d)
		}
		got[fmt.Sprint(r["hour"])] = [2]int64{int64(n), int64(s)}
	}
	if fmt.Sprint(got) != fmt.Sprint(kept) {
		t.Errorf("Spark through the table: %v, want (count, sum) per hour %v", got, kept)
	}
}
