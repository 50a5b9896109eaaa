package tables

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

const eventV2 = `{"type":"record","name":"Event","namespace":"test.tables","fields":[
 {"name":"datacenter","type":"string"},
 {"name":"producer","type":"string"},
 {"name":"seq","type":"long"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"region","type":["null","string"],"default":null}]}`

// eventV3 changes seq's type: no table can take it.
const eventV3 = `{"type":"record","name":"Event","namespace":"test.tables","fields":[
 {"name":"datacenter","type":"string"},
 {"name":"producer","type":"string"},
 {"name":"seq","type":"string"},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"region","type":["null","string"],"default":null}]}`

// event is one record as written and as Spark should return it.
type event struct {
	datacenter, producer string
	seq                  int64
	note, region         *string
}

func (e event) native(v2 bool) map[string]any {
	opt := func(s *string) any {
		if s == nil {
			return nil
		}
		return goavro.Union("string", *s)
	}
	m := map[string]any{"datacenter": e.datacenter, "producer": e.producer, "seq": e.seq, "note": opt(e.note)}
	if v2 {
		m["region"] = opt(e.region)
	}
	return m
}

// String is the record as a row of the content query below prints it.
func (e event) String() string {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return fmt.Sprintf("%s/%s/%d/%s/%s", e.datacenter, e.producer, e.seq, s(e.note), s(e.region))
}

// hourEvents makes n records of hour h: two datacenters, three producers,
// a note on every third; dup repeats the first record (a duplicate a
// count(DISTINCT ...) must not count).
func hourEvents(h, n int, region string, dup bool) []event {
	var out []event
	for i := 0; i < n; i++ {
		e := event{datacenter: []string{"dc1", "dc2"}[i%2], producer: fmt.Sprintf("p%d", i%3), seq: int64(h*1000 + i)}
		if i%3 == 0 {
			note := fmt.Sprintf("note %d/%d", h, i)
			e.note = &note
		}
		if region != "" && i%2 == 0 {
			e.region = &region
		}
		out = append(out, e)
	}
	if dup {
		out = append(out, out[0])
	}
	return out
}

// writeHour writes an hour's records as two loader files (partitions 0 and 1).
func writeHour(t *testing.T, fsys filesys.FS, base, topic string, hour time.Time, schemaID int, schema string, evs []event) {
	t.Helper()
	v2 := strings.Contains(schema, `"region"`)
	half := len(evs) / 2
	for p, part := range [][]event{evs[:half], evs[half:]} {
		recs := make([]map[string]any, len(part))
		for i, e := range part {
			recs[i] = e.native(v2)
		}
		writeLoaderFile(t, fsys, base, topic, hour, int32(p), int64(hour.Hour()*100), schemaID, schema, recs)
	}
}

// counts is what the audit would say of an hour: records, distinct
// (datacenter, producer, seq) and the sum of seq.
func counts(evs []event) string {
	distinct := map[string]bool{}
	var sum int64
	for _, e := range evs {
		distinct[fmt.Sprintf("%s/%s/%d", e.datacenter, e.producer, e.seq)] = true
		sum += e.seq
	}
	return fmt.Sprintf("%d %d %d", len(evs), len(distinct), sum)
}

const groupBy = `SELECT hour, count(*) AS n, count(DISTINCT datacenter, producer, seq) AS d, sum(seq) AS s FROM %s GROUP BY hour ORDER BY hour`

// gotCounts turns the rows of groupBy into hour -> "n d s".
func gotCounts(rows []map[string]any) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[fmt.Sprint(r["hour"])] = fmt.Sprintf("%.0f %.0f %.0f", r["n"], r["d"], r["s"])
	}
	return out
}

func eventRows(rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		s := func(k string) string {
			if r[k] == nil {
				return "<nil>"
			}
			return fmt.Sprint(r[k])
		}
		out = append(out, fmt.Sprintf("%s/%s/%.0f/%s/%s", r["datacenter"], r["producer"], r["seq"], s("note"), s("region")))
	}
	return out
}

func sortedStrings(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	slices.Sort(out)
	return out
}

// Loader files and compacted hours on the real HDFS, registered in the
// real metastore, read by Spark SQL (Hive support, default settings):
// counts and content exactly as written with Avro partitions, with a mix
// after compaction switched some to Parquet, and with a new schema
// version whose added column old partitions read as null; DuckDB reads a
// compacted hour's Parquet with the same counts; a type change stops
// registration with a clear error and changes nothing.
func TestSparkReadsRegisteredHours(t *testing.T) {
	uri := testenv.HiveMetastore(t)
	fsys, base, hdfsURI := openHDFS(t)
	reg := newTestRegistry(t)
	db := randomName("tables_test_")
	const topic = "dc.events"
	table := db + ".dc_events"
	metrics := prometheus.NewRegistry()
	m := newTestMetastore(t, uri, db, hdfsURI, reg, Options{Logger: testenv.Logger(t, 0), Metrics: metrics})
	t.Cleanup(func() { dropDatabase(t, m, db) })

	v1 := reg.register(t, topic+"-value", eventV1)
	h0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	hour := func(i int) time.Time { return h0.Add(time.Duration(i) * time.Hour) }
	written := map[string][]event{}
	for i, n := range []int{5, 8, 13} {
		evs := hourEvents(i, n, "", i == 1)
		writeHour(t, fsys, base, topic, hour(i), v1, eventV1, evs)
		written[PartitionValue(hour(i), time.Hour)] = evs
	}
	want := func(n int, ids ...int) []Partition {
		var out []Partition
		for i := 0; i < n; i++ {
			out = append(out, hourPartition(t, fsys, base, hdfsURI, topic, hour(i), ids[i]))
		}
		return out
	}
	syncOK(t, m, topic, want(3, v1, v1, v1))
	beforeCompaction := testenv.SparkSQL(t, uri, fmt.Sprintf(groupBy, table))

	// Hours 0 and 1 closed: jobs/compact makes them ready, compacts them
	// into Parquet and syncs the catalog, which then holds those two (the
	// ready ones) at their Parquet locations.
	if sum := compactThrough(t, fsys, base, topic, hour(2), m); sum.HoursCompacted != 2 {
		t.Fatalf("compaction: %+v, want 2 hours", sum)
	}
	published, err := hours.PublishedPartitions(fsys, base, topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != 2 {
		t.Fatalf("published after compaction: %v", published)
	}
	got := registered(t, m, topic)
	if len(got) != 2 {
		t.Fatalf("registered after compaction: %v", got)
	}
	for _, p := range published {
		if r := got[PartitionValue(p.Start, p.Duration)]; p.Format != "parquet" || !strings.HasPrefix(r, "ParquetHiveSerDe "+hdfsURI+p.Location+" ") {
			t.Fatalf("hour %v published as %s at %s, registered as %q", p.Start, p.Format, p.Location, r)
		}
	}
	// Hours 2 and 3 (3 written with v2) registered as Avro beside them.
	var data []hours.Data
	v2 := reg.register(t, topic+"-value", eventV2)
	evs3 := hourEvents(3, 9, "eu-west", false)
	writeHour(t, fsys, base, topic, hour(3), v2, eventV2, evs3)
	written[PartitionValue(hour(3), time.Hour)] = evs3
	parts := want(4, v1, v1, v1, v2)
	if parts[0].Format != "parquet" || parts[1].Format != "parquet" || parts[2].Format != "avro" || parts[3].Format != "avro" {
		t.Fatalf("formats after compaction: %v", parts)
	}
	syncOK(t, m, topic, parts)
	syncOK(t, m, topic, parts)
	for i, p := range parts {
		serde := map[string]string{"avro": "AvroSerDe ", "parquet": "ParquetHiveSerDe "}[p.Format]
		if got := registered(t, m, topic)[PartitionValue(p.Start, time.Hour)]; !strings.HasPrefix(got, serde+p.Location+" ") {
			t.Fatalf("hour %d registered as %q, want %s at %s", i, got, serde, p.Location)
		}
	}
	if cols := strings.Join(tableColumns(t, m, topic), ","); cols != "datacenter string,producer string,seq bigint,note string,region string" {
		t.Fatalf("table columns after v2: %s", cols)
	}
	after := testenv.SparkSQL(t, uri,
		fmt.Sprintf(groupBy, table),
		fmt.Sprintf(`SELECT hour, count(region) AS n FROM %s GROUP BY hour ORDER BY hour`, table),
		fmt.Sprintf(`SELECT hour, datacenter, producer, seq, note, region FROM %s ORDER BY hour, seq, datacenter`, table),
		fmt.Sprintf(`SHOW PARTITIONS %s`, table),
	)

	// Counts: exactly what was written, before and after compaction.
	wantCounts := map[string]string{}
	for v, evs := range written {
		wantCounts[v] = counts(evs)
	}
	before := map[string]string{}
	for v, c := range wantCounts {
		if v != PartitionValue(hour(3), time.Hour) {
			before[v] = c
		}
	}
	if got := gotCounts(beforeCompaction[0]); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("Spark, Avro partitions: %v, want %v", got, before)
	}
	if got := gotCounts(after[0]); fmt.Sprint(got) != fmt.Sprint(wantCounts) {
		t.Errorf("Spark, Parquet+Avro partitions: %v, want %v", got, wantCounts)
	}
	// The added column: null in every old partition, set in the new one.
	for _, r := range after[1] {
		n, v := r["n"].(float64), fmt.Sprint(r["hour"])
		wantN := 0
		for _, e := range written[v] {
			if e.region != nil {
				wantN++
			}
		}
		if int(n) != wantN {
			t.Errorf("hour %s: %v records with a region, want %d", v, n, wantN)
		}
	}
	// Content, record by record, across both formats and both versions.
	gotRows := map[string][]string{}
	for i, r := range after[2] {
		v := fmt.Sprint(r["hour"])
		gotRows[v] = append(gotRows[v], eventRows(after[2][i:i+1])...)
	}
	for v, evs := range written {
		got := gotRows[v]
		slices.Sort(got)
		if w := sortedStrings(evs); !slices.Equal(got, w) {
			t.Errorf("hour %s: Spark rows\n%v\nwant\n%v", v, got, w)
		}
	}
	if len(after[3]) != 4 {
		t.Errorf("SHOW PARTITIONS: %v", after[3])
	}

	// DuckDB reads a compacted hour's Parquet files (copied off HDFS) with the same counts.
	local := t.TempDir()
	data, err = hours.HourData(fsys, hours.Hour{Topic: topic, Start: hour(1), Dir: hours.Dir(base, topic, hour(1))})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		b, err := filesys.ReadFile(fsys, d.Path())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(local, path.Base(d.Path())), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	duck := testenv.DuckDB(t, fmt.Sprintf(`SELECT count(*) AS n, count(DISTINCT (datacenter, producer, seq)) AS d, sum(seq) AS s FROM read_parquet('%s/*.parquet')`, local))
	if got, w := fmt.Sprintf("%v %v %v", duck[0][0]["n"], duck[0][0]["d"], duck[0][0]["s"]), counts(written[PartitionValue(hour(1), time.Hour)]); got != w {
		t.Errorf("DuckDB on hour 1's Parquet: %s, want %s", got, w)
	}

	// A type change: Sync refuses it, names topic, field and types, changes nothing.
	beforeParts, beforeCols := registered(t, m, topic), tableColumns(t, m, topic)
	reg.setCompatibility(t, topic+"-value", "NONE")
	v3 := reg.register(t, topic+"-value", eventV3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = m.Sync(ctx, topic, append(parts, Partition{Topic: topic, Start: hour(4), Duration: time.Hour,
		Location: hdfsURI + hours.Dir(base, topic, hour(4)), Format: "avro", SchemaID: v3}))
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("sync with a type change: err = %v, want ErrIncompatible", err)
	}
	for _, part := range []string{topic, "field seq", "bigint", "string"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	if got := registered(t, m, topic); fmt.Sprint(got) != fmt.Sprint(beforeParts) {
		t.Errorf("partitions changed by a refused sync:\n%v\nwere\n%v", got, beforeParts)
	}
	if got := tableColumns(t, m, topic); !slices.Equal(got, beforeCols) {
		t.Errorf("columns changed by a refused sync: %v, were %v", got, beforeCols)
	}
	if b := testutil.ToFloat64(m.metrics.blocked.WithLabelValues(topic)); b != 1 {
		t.Errorf("tributary_tables_schema_blocked = %v, want 1", b)
	}
}

// dropDatabase drops a test's database with its tables (their files are
// the test's to delete: the tables are external).
func dropDatabase(t *testing.T, m *Metastore, db string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx := context.Background()
	cl, err := m.conn.get(ctx)
	if err != nil {
		t.Logf("drop database %s: %v", db, err)
		return
	}
	if err := m.conn.check(cl.DropDatabase(ctx, db, false, true)); err != nil {
		t.Logf("drop database %s: %v", db, err)
	}
}
