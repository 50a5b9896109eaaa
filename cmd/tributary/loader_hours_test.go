package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/testkit/testenv"
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
	run("loader", "run", "--config", conf, "--log-level", "warn")
	states := func(rep []hours.HourReport) string {
		var s []string
		for _, r := range rep {
			s = append(s, r.State)
		}
		return strings.Join(s, " ")
	}
	if rep := hoursOf(t, conf); states(rep) != "waiting-for-audit waiting-for-audit loading" || rep[0].Files != 1 || rep[0].Format != "avro" {
		t.Fatalf("before compaction: %s %+v", states(rep), rep)
	}
	catalog := filepath.Join(f.dir, "catalog.json")
	run("jobs", "compact", "--base", out, "--loader-job", "hourly", "--delay", "1m", "--catalog-file", catalog, "--log-level", "warn")
	rep := hoursOf(t, conf)
	if states(rep) != "compacted compacted loading" || rep[1].Format != "parquet" || !strings.HasSuffix(rep[1].Location, ".c1") {
		t.Fatalf("after compaction: %s %+v", states(rep), rep)
	}
	cat, err := hours.ReadFileCatalog(catalog)
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

// TestJobsCompactAndHoursRefuseTypos (issue 39): a topic, loader job or
// base that does not exist, and a --closed-through in the future, past
// what the loader committed or in no accepted format, each fail with a
// one-line error naming it, writing nothing; `loader hours` shows the late
// files of a compacted hour, and the recompaction's summary tells the late
// records from the generation it rewrote.
func TestJobsCompactAndHoursRefuseTypos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newLoaderFixture(t)
	f.broker.CreateTopic(t, "views", 1)
	const sch = `{"type":"record","name":"View","fields":[{"name":"n","type":"long"}]}`
	hour := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	for i := range 10 {
		f.produce(ctx, t, "views", sch, map[string]any{"n": int64(i)}, hour.Add(time.Duration(i)*time.Minute))
	}
	out := t.TempDir()
	conf := f.writeProps(t, "loader.properties", f.loaderProps("views", out))
	mustRun(t, "", "loader", "run", "--config", conf, "--log-level", "warn")

	compactArgs := func(args ...string) []string {
		return append([]string{"jobs", "compact", "--base", out, "--delay", "1m", "--log-level", "warn"}, args...)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"loader", "hours", "--config", conf, "--topic", "nosuch"}, `--topic "nosuch": no such topic under file://` + out + ` (topics there: views)`},
		{compactArgs("--loader-job", "hourlyy"), `--loader-job "hourlyy": no such loader job under ` + out + ` (loader jobs there: hourly)`},
		{[]string{"jobs", "compact", "--base", out + "/nope", "--loader-job", "hourly"}, `--base ` + out + `/nope: does not exist`},
		{compactArgs("--loader-job", "hourly", "--topics", "veiws"), `--topics "veiws": no such topic under ` + out + ` (topics there: views)`},
		{compactArgs("--closed-through", "yesterday"), `--closed-through "yesterday": want an RFC 3339 time (2026-12-04T10:00:00Z), now, or now-DURATION (now-2h, now-90m)`},
		{compactArgs("--closed-through", "now+1h"), `--closed-through "now+1h": want an RFC 3339 time`},
		{compactArgs("--closed-through", future), `--closed-through ` + future + ` is in the future`},
		{compactArgs("--closed-through", future, "--force-closed-through"), `--closed-through ` + future + ` is in the future`},
		{compactArgs("--closed-through", "now"), `is past what loader job "hourly" has committed (through `},
		{compactArgs("--closed-through", "now", "--loader-job", "hourly"), `is past what loader job "hourly" has committed (through `},
	} {
		res := runCLI(t, time.Minute, "", c.args...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) || strings.Contains(res.err.Error(), "\n") || res.stdout != "" {
			t.Errorf("%v: %v (stdout %q), want an error with %q", c.args, res.err, res.stdout, c.want)
		}
	}
	if rep := hoursOf(t, conf); rep[0].State != "waiting-for-audit" {
		t.Fatalf("a refused run changed the hour: %+v", rep)
	}
	mustRun(t, "", compactArgs("--closed-through", "now-2h")...)
	if rep := hoursOf(t, conf); rep[0].State != "compacted" || rep[0].LateFiles != 0 {
		t.Fatalf("--closed-through now-2h: %+v", rep)
	}
	mustRun(t, "", compactArgs("--closed-through", "now", "--force-closed-through")...)

	// Three late records of the compacted hour wait in its directory.
	for i := range 3 {
		f.produce(ctx, t, "views", sch, map[string]any{"n": int64(100 + i)}, hour.Add(time.Duration(30+i)*time.Minute))
	}
	mustRun(t, "", "loader", "run", "--config", conf, "--log-level", "warn")
	rep := hoursOf(t, conf)
	if rep[0].State != "compacted" || rep[0].LateFiles != 1 || rep[0].LateBytes <= 0 {
		t.Fatalf("late files: %+v", rep)
	}
	table := mustRun(t, "", "loader", "hours", "--config", conf, "--topic", "views").stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if want := fmt.Sprintf("1 (%d B, to recompact)", rep[0].LateBytes); !strings.Contains(lines[0], "LATE") || !strings.Contains(lines[1], want) {
		t.Fatalf("table, want %q in the hour's row:\n%s", want, table)
	}
	res := mustRun(t, "", compactArgs("--loader-job", "hourly")...)
	var sum compact.Summary
	all := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if err := json.Unmarshal([]byte(all[len(all)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.HoursRecompacted != 1 || sum.Records != 3 || sum.FilesIn != 1 || sum.FilesOut != 1 ||
		sum.FilesRewritten != 1 || sum.RecordsRewritten != 10 || sum.BytesRewritten <= 0 || sum.BytesOut <= 0 {
		t.Errorf("recompaction summary %s", all[len(all)-1])
	}
	if rep := hoursOf(t, conf); rep[0].LateFiles != 0 || rep[0].Files != 2 {
		t.Errorf("after recompaction: %+v", rep)
	}
}

// hoursOf is `loader hours --json` of the topic views.
func hoursOf(t *testing.T, conf string) []hours.HourReport {
	t.Helper()
	var rep []hours.HourReport
	if err := json.Unmarshal([]byte(mustRun(t, "", "loader", "hours", "--config", conf, "--topic", "views", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
