package tablestest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
)

// stepLine is compaction's debug line for each of its steps.
var stepLine = regexp.MustCompile(`msg=step step=(\d+) at=("(?:[^"\\]|\\.)*"|\S+)`)

// TestCompactionCrashRealMetastore SIGKILLs `tributary jobs compact
// --tables-config` (the real metastore of make test) at its steps of
// readiness (_SUCCESS), registration (each sync of the metastore) and
// swap (the generation's files, the commit, the deletion of the inputs),
// each crash on a fresh copy of the same loaded hours and its own table
// (package compact's own crash tests cover every step with a file catalog).
// After each crash the metastore shows only ready hours, each at a
// location that exists and holds one format only: the loaded Avro files
// all there, or Parquet with every record of the hour. A second run then
// recovers, and the table holds exactly what the files publish, every
// hour compacted. By default the crash points are the first readiness
// mark, the first commit and the metastore sync after each;
// TRIBUTARY_FULL=1 crashes at every step (18, ~3 minutes on a busy
// machine).
func TestCompactionCrashRealMetastore(t *testing.T) {
	t.Parallel() // mostly child processes and metastore calls: beside the others of the package
	uri := testenv.HiveMetastore(t)
	r := newRig(t, "pv")
	const topic, perHour = "pv", 25
	hour0 := time.Now().UTC().Truncate(time.Hour).Add(-5 * 24 * time.Hour)
	var ts []time.Time
	for i := range 2 * perHour {
		ts = append(ts, hour0.Add(time.Duration(i/perHour)*time.Hour+time.Duration(i%perHour)*time.Minute))
	}
	r.produce(t, topic, viewsV1, ts, func(i int) map[string]any {
		return map[string]any{"n": int64(i), "page": fmt.Sprintf("/p/%d", i%5)}
	})
	seed := filepath.Join(r.dir, "seed")
	loaderConf := testproc.WriteProperties(t, r.dir, "loader.properties", map[string]string{
		"name": "pv-loader", "bootstrap.servers": strings.Join(r.cl.Bootstrap(), ","),
		"schema.registry.url": r.cl.RegistryURL(), "topics": topic, "output.uri": "file://" + seed, "audit.enable": "false"})
	bin := testproc.Binary(t)
	if out, err := exec.Command(bin, "loader", "run", "--config", loaderConf, "--log-level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("loader run: %v\n%s", err, out)
	}
	fsys := filesys.Local()
	seedHours, err := hours.List(fsys, seed, topic)
	if err != nil || len(seedHours) != 2 {
		t.Fatalf("loaded hours %v, %v", seedHours, err)
	}
	var seedNames [][]string
	for _, h := range seedHours {
		names, err := hours.DataFiles(fsys, h.Dir)
		if err != nil || len(names) == 0 {
			t.Fatalf("hour %s: %v %v", h, names, err)
		}
		seedNames = append(seedNames, names)
	}
	db := fmt.Sprintf("tablestest_crash_%d", time.Now().UnixNano())
	closed := hour0.Add(3 * time.Hour).Format(time.RFC3339)

	// run compacts base into table crash<n>_pv; it reports whether the
	// process was SIGKILLed, and its output.
	run := func(base string, n, crashAt int, level string) (bool, string) {
		conf := testproc.WriteProperties(t, r.dir, fmt.Sprintf("tables-%d.properties", n), map[string]string{
			"hive.integration": "true", "hive.metastore.uris": uri, "hive.database": db,
			"hive.table.name": fmt.Sprintf("crash%d_${topic}", n), "schema.registry.url": r.cl.RegistryURL()})
		return testproc.RunCrashable(t, []string{fmt.Sprintf("%s=%d", compact.EnvCrashAt, crashAt)}, "jobs", "compact", "--base", base,
			"--closed-through", closed, "--delay", "1m", "--tables-config", conf, "--log-level", level)
	}
	copySeed := func(n int) string {
		base := filepath.Join(r.dir, fmt.Sprintf("base%03d", n))
		if err := os.CopyFS(base, os.DirFS(seed)); err != nil {
			t.Fatal(err)
		}
		return base
	}

	// The steps, from an uninterrupted run at debug level.
	_, out := run(copySeed(0), 0, 0, "debug")
	var steps []string
	for _, m := range stepLine.FindAllStringSubmatch(out, -1) {
		at := m[2]
		if u, err := strconv.Unquote(at); err == nil {
			at = u
		}
		steps = append(steps, at)
		if n, _ := strconv.Atoi(m[1]); n != len(steps) {
			t.Fatalf("step %s numbered out of order: %v", m[1], steps)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("an uninterrupted compaction logged only the steps %v:\n%s", steps, out)
	}
	parquet := map[string]int{} // key -> wanted rows; key's files listed in files
	files := map[string][]string{}
	check := func(n int, stage string, exact bool) {
		t.Helper()
		m, err := tables.New(tables.Config{URIs: []string{uri}, Database: db, TableName: fmt.Sprintf("crash%d_${topic}", n)}, r.rc, tables.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		base := filepath.Join(r.dir, fmt.Sprintf("base%03d", n))
		got, err := m.Registered(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := hours.Published(fsys, base, topic)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("crash %d (%s), %s", n, steps[max(n-1, 0)], stage)
		var g, w []string
		for _, p := range got {
			loc := strings.TrimPrefix(strings.TrimPrefix(p.Location, "file:"), "//")
			g = append(g, p.Value+" "+p.Format+" "+loc)
			i := -1
			for j, h := range seedHours {
				if tables.PartitionValue(h.Start, time.Hour) == p.Value {
					i = j
				}
			}
			if i < 0 {
				t.Fatalf("%s: the metastore has partition %s, not an hour of the files", key, p.Value)
			}
			h := hours.Hour{Topic: topic, Start: seedHours[i].Start, Dir: filepath.Join(base, strings.TrimPrefix(seedHours[i].Dir, seed))}
			if ok, err := filesys.Exists(fsys, filepath.Join(h.Dir, hours.SuccessMarker)); err != nil || !ok {
				t.Fatalf("%s: the metastore shows hour %s, which has no %s (%v)", key, p.Value, hours.SuccessMarker, err)
			}
			list, err := os.ReadDir(loc)
			if err != nil {
				t.Fatalf("%s: partition %s points at %s: %v", key, p.Value, loc, err)
			}
			var names []string
			for _, e := range list {
				if e.IsDir() {
					t.Fatalf("%s: partition %s's location %s holds a directory %s", key, p.Value, loc, e.Name())
				}
				if hours.IsData(e.Name()) {
					if !strings.HasSuffix(e.Name(), "."+p.Format) {
						t.Fatalf("%s: partition %s (%s) at %s holds %s", key, p.Value, p.Format, loc, e.Name())
					}
					names = append(names, filepath.Join(loc, e.Name()))
				}
			}
			switch {
			case p.Format == "avro" && len(names) != len(seedNames[i]):
				t.Fatalf("%s: Avro partition %s at %s holds %v, want the loaded %v", key, p.Value, loc, names, seedNames[i])
			case p.Format == "parquet" && len(names) == 0:
				t.Fatalf("%s: Parquet partition %s at %s holds no data", key, p.Value, loc)
			case p.Format == "parquet":
				k := key + " " + p.Value
				parquet[k], files[k] = perHour, names
			}
		}
		for _, st := range pub {
			w = append(w, tables.PartitionValue(st.Start, time.Hour)+" "+string(st.Format)+" "+st.Location)
		}
		if exact && strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Fatalf("%s: the table holds\n%s\nthe files publish\n%s", key, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
	check(0, "uninterrupted", true)
	full := os.Getenv("TRIBUTARY_FULL") == "1"
	crashes := 0
	// The short default: the first readiness mark, the sync registering
	// the ready hours, the first commit of a swap and the sync switching
	// that hour to Parquet.
	short := map[int]bool{}
	for _, kind := range []string{"ready ", "commit "} {
		for n, at := range steps {
			if strings.HasPrefix(at, kind) {
				short[n+1] = true
				for k := n + 1; k < len(steps); k++ {
					if strings.HasPrefix(steps[k], "sync catalog") {
						short[k+1] = true
						break
					}
				}
				break
			}
		}
	}
	for n := 1; n <= len(steps); n++ {
		at := steps[n-1]
		if !full && !short[n] {
			continue
		}
		base := copySeed(n)
		if killed, out := run(base, n, n, "warn"); !killed {
			t.Fatalf("crash at step %d (%s) did not happen:\n%s", n, at, out)
		}
		crashes++
		check(n, "crashed", false)
		if killed, out := run(base, n, 0, "warn"); killed {
			t.Fatalf("recovery after crash %d killed: %s", n, out)
		}
		check(n, "recovered", true)
		st, err := hours.Statuses(fsys, base, topic, time.Time{}, 0)
		if err != nil || len(st) != 2 || st[0].State != hours.StateCompacted || st[1].State != hours.StateCompacted {
			t.Fatalf("after recovery from crash %d: %+v %v", n, st, err)
		}
	}
	if crashes < 4 {
		t.Fatalf("only %d crash points of %d steps: %v", crashes, len(steps), steps)
	}
	// Every Parquet view holds every record of its hour: DuckDB counts them.
	var keys, queries []string
	for k, fs := range files {
		keys = append(keys, k)
		queries = append(queries, fmt.Sprintf("SELECT count(*) AS n, count(DISTINCT n) AS d FROM read_parquet(['%s'])", strings.Join(fs, "','")))
	}
	res := testenv.DuckDB(t, queries...)
	for i, k := range keys {
		if len(res[i]) != 1 || res[i][0]["n"] != float64(parquet[k]) || res[i][0]["d"] != float64(parquet[k]) {
			t.Errorf("%s: DuckDB reads %v, want %d distinct records", k, res[i], parquet[k])
		}
	}
	t.Logf("%d steps, %d crash points, %d Parquet views counted by DuckDB", len(steps), crashes, len(keys))
}
