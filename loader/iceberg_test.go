package loader_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/icetable"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/icereader"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/mirror/origin"
)

// Two versions of a record of many types; v2 adds a field with a default.
const typesV1 = `{"type":"record","name":"Event","namespace":"test","fields":[
 {"name":"id","type":"long"},
 {"name":"name","type":"string"},
 {"name":"score","type":"double"},
 {"name":"ok","type":"boolean"},
 {"name":"n","type":"int"},
 {"name":"raw","type":"bytes"},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tag","type":["null","string"],"default":null},
 {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B","C"]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"long"}}]}`

var typesV2 = strings.TrimSuffix(typesV1, "]}") + `,
 {"name":"ref","type":"string","default":""}]}`

// iceData is a topic of records of typesV1 (even ids) and typesV2 (odd),
// over partitions and two hours.
type iceData struct {
	topic      string
	partitions int32
}

func (d iceData) ts(i int) time.Time { return hourStart().Add(time.Duration(i) * 7 * time.Second) }

func (d iceData) value(i int) map[string]any {
	v := map[string]any{"id": int64(i), "name": fmt.Sprintf("name-%d", i), "score": float64(i) / 4, "ok": i%3 == 0,
		"n": int32(-i), "raw": []byte{byte(i), byte(i >> 8), 0}, "at": d.ts(i).Add(time.Duration(i) * time.Millisecond),
		"tag": nil, "kind": []string{"A", "B", "C"}[i%3], "tags": []any{"t", strconv.Itoa(i % 5)},
		"attrs": map[string]any{"k": int64(i) * 1000}}
	if i%4 == 1 {
		v["tag"] = map[string]any{"string": "tag-" + strconv.Itoa(i)}
	}
	if i%2 == 1 {
		v["ref"] = "ref-" + strconv.Itoa(i%13)
	}
	return v
}

// row is what a reader returns for record i (at the Kafka offset given).
func (d iceData) row(i int, offset int64) map[string]any {
	v := d.value(i)
	r := map[string]any{"id": v["id"], "name": v["name"], "score": v["score"], "ok": v["ok"], "n": v["n"], "raw": v["raw"],
		"at": icereader.InstantOf(v["at"].(time.Time)), "tag": nil, "kind": v["kind"], "tags": v["tags"],
		"attrs": []icereader.MapEntry{{Key: "k", Value: int64(i) * 1000}}, "ref": nil,
		"_kafka": map[string]any{"partition": int32(i) % d.partitions, "offset": offset, "timestamp": icereader.InstantOf(d.ts(i))}}
	if t, ok := v["tag"].(map[string]any); ok {
		r["tag"] = t["string"]
	}
	if s, ok := v["ref"].(string); ok {
		r["ref"] = s // v1 records lack it: null, as in Iceberg for older files
	}
	return r
}

// produce produces records from..to-1 of d, and, before record bad (if in
// range), one record that is not framed Avro; it returns each id's offset.
func (c *cluster) produceIce(t *testing.T, d iceData, from, to int, bad map[int]bool) map[int]int64 {
	t.Helper()
	ctx := context.Background()
	var recs []*kgo.Record
	var ids []int
	for i := from; i < to; i++ {
		p := int32(i) % d.partitions
		if bad[i] {
			recs = append(recs, &kgo.Record{Topic: d.topic, Partition: p, Value: []byte("not avro"), Timestamp: d.ts(i)})
			ids = append(ids, -1)
		}
		text := typesV1
		if i%2 == 1 {
			text = typesV2
		}
		v, err := c.ser.Encode(ctx, d.topic+"-value", text, d.value(i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: d.topic, Partition: p, Value: v, Timestamp: d.ts(i)})
		ids = append(ids, i)
	}
	res := c.cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	at := map[*kgo.Record]int{}
	for k, r := range recs {
		at[r] = ids[k]
	}
	out := map[int]int64{}
	for _, r := range res {
		if id := at[r.Record]; id >= 0 {
			out[id] = r.Record.Offset
		}
	}
	return out
}

// iceConfig is a loader job writing the topic to a SQL catalog of its own
// (a SQLite file and a file:// warehouse in a temporary directory).
func iceConfig(t *testing.T, c *cluster, job, topic string) (loader.Config, icereader.Catalog, string) {
	dir := t.TempDir()
	cfg := baseConfig(c, job, topic, "file://"+filepath.Join(dir, "out"))
	cfg.TableFormat = loader.FormatIceberg
	cfg.Iceberg = icetable.Config{Type: icetable.CatalogSQL, URI: filepath.Join(dir, "catalog.db"),
		Warehouse: "file://" + filepath.Join(dir, "warehouse")}
	cat := icereader.SQLCatalog(icetable.DefaultCatalogName, cfg.Iceberg.URI, cfg.Iceberg.Warehouse)
	return cfg, cat, filepath.Join(dir, "out")
}

// runInProcess runs the loader once in this process.
func runInProcess(t *testing.T, ctx context.Context, cfg loader.Config) loader.Summary {
	t.Helper()
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sum, err := l.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// readIce reads the table with pyiceberg: its rows by id (each id once, or
// the test fails) and the paths of the current snapshot's data files
// (each once).
func readIce(t *testing.T, cat icereader.Catalog, table string) map[int64]map[string]any {
	t.Helper()
	res := icereader.ReadPyIceberg(t, cat, table)
	out := map[int64]map[string]any{}
	for _, r := range res.Rows {
		id := r["id"].(int64)
		if out[id] != nil {
			t.Errorf("record %d read twice: %v", id, r["_kafka"])
		}
		out[id] = r
	}
	var files []string
	icereader.PyIcebergScript(t, cat, `result = [t.file.file_path for t in catalog.load_table(input).scan().plan_files()]`, table, &files)
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			t.Errorf("data file %s twice in the current snapshot", f)
		}
		seen[f] = true
	}
	return out
}

// checkIce checks that the table holds exactly ids 0..n-1 with their values.
func checkIce(t *testing.T, d iceData, got map[int64]map[string]any, offsets map[int]int64, n int) {
	t.Helper()
	bad := 0
	for i := 0; i < n && bad < 5; i++ {
		r := got[int64(i)]
		if r == nil {
			t.Errorf("record %d missing", i)
			bad++
			continue
		}
		if diff := icereader.DiffRows([]map[string]any{d.row(i, offsets[i])}, []map[string]any{r}); diff != "" {
			t.Errorf("record %d:\n%s", i, diff)
			bad++
		}
	}
	if len(got) != n {
		t.Errorf("table holds %d records, want %d", len(got), n)
	}
}

// committedOffsets reads, per partition, the table property offsets (the
// same as the newest snapshot naming the partition).
func committedOffsets(t *testing.T, cat icereader.Catalog, table string) map[int32]int64 {
	t.Helper()
	md := icereader.ReadMetadata(t, cat, table)
	out := map[int32]int64{}
	for p := int32(0); ; p++ {
		v, ok := md.Properties[icetable.OffsetKeyPrefix+strconv.Itoa(int(p))]
		if !ok {
			break
		}
		o, _ := strconv.ParseInt(v, 10, 64)
		out[p] = o
		// The newest snapshot naming p says the same.
		for k := len(md.Snapshots) - 1; k >= 0; k-- {
			if s, ok := md.Snapshots[k].Summary[icetable.OffsetKeyPrefix+strconv.Itoa(int(p))]; ok {
				if s != v {
					t.Errorf("partition %d: newest snapshot's offset %s, property %s", p, s, v)
				}
				break
			}
		}
	}
	return out
}

// TestIcebergLoad loads records of many types and two schema versions,
// with bad records among them, into an Iceberg table (SQL catalog,
// file:// warehouse) and reads them back with pyiceberg value by value:
// the table's committed offsets are the consumed end offsets, bad records
// are in _errors, the audit counts every record once, and a second run
// appends only what was produced since.
func TestIcebergLoad(t *testing.T) {
	c := newCluster(t)
	d := iceData{topic: "ice.events", partitions: 3}
	c.CreateTopic(t, d.topic, d.partitions)
	bad := map[int]bool{10: true, 11: true, 301: true}
	offsets := c.produceIce(t, d, 0, 400, bad)
	cfg, cat, base := iceConfig(t, c, "ice-load", d.topic)
	cfg.CommitRecords = 90 // several commits per partition
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func() loader.Summary { t.Helper(); return runInProcess(t, ctx, cfg) }
	if sum := run(); sum.Records != 400 || sum.Errors != 3 || sum.Partitions != 3 {
		t.Fatalf("summary %+v, want 400 records and 3 errors over 3 partitions", sum)
	}
	table := "default." + loader.TableName(d.topic)
	checkIce(t, d, readIce(t, cat, table), offsets, 400)
	ends, err := c.adm.ListEndOffsets(ctx, d.topic)
	if err != nil {
		t.Fatal(err)
	}
	got := committedOffsets(t, cat, table)
	for p := int32(0); p < d.partitions; p++ {
		if e, _ := ends.Lookup(d.topic, p); got[p] != e.Offset {
			t.Errorf("partition %d: committed offset %d, end offset %d", p, got[p], e.Offset)
		}
	}
	fsys, base, err := filesys.Open(ctx, "file://"+base)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if errs := dataFilesUnder(t, fsys, base+"/_errors/"+d.topic); len(errs) != 3 {
		t.Errorf("_errors files %v, want one per bad record (each in a commit of its own)", errs)
	}

	// A second run appends only the new records.
	for i, o := range c.produceIce(t, d, 400, 500, nil) {
		offsets[i] = o
	}
	if sum := run(); sum.Records != 100 || sum.Errors != 0 {
		t.Fatalf("second run: %+v, want 100 records", sum)
	}
	checkIce(t, d, readIce(t, cat, table), offsets, 500)
	checkAudit(t, c, cfg.Name, map[string]int64{d.topic: 500})
}

// TestIcebergCrashAtEveryStep kills a loader process in iceberg mode
// (SIGKILL, through the test hook) at every step of its second commit,
// then runs the loader normally: pyiceberg reads every record exactly once
// with its values, no data file twice in the current snapshot, and the
// audit counts every record once.
func TestIcebergCrashAtEveryStep(t *testing.T) {
	c := newCluster(t)
	d := iceData{topic: "icecrash", partitions: 2}
	c.CreateTopic(t, d.topic, d.partitions)
	offsets := c.produceIce(t, d, 0, 600, map[int]bool{7: true, 450: true})
	for step := 1; step <= loader.NumSteps; step++ {
		t.Run(fmt.Sprintf("step%d", step), func(t *testing.T) {
			cfg, cat, _ := iceConfig(t, c, fmt.Sprintf("icecrash-%d", step), d.topic)
			cfg.CommitRecords = 130
			ch := startChild(t, cfg, fmt.Sprintf("%s=%d:2", loader.CrashEnv, step))
			if err := ch.wait(t); !killedBySIGKILL(err) {
				t.Fatalf("crashing run ended with %v, want SIGKILL at step %d:\n%s", err, step, ch.output())
			}
			rec := startChild(t, cfg)
			if err := rec.wait(t); err != nil {
				t.Fatalf("recovering run: %v\n%s", err, rec.output())
			}
			defer func() {
				if t.Failed() {
					t.Logf("recovering run:\n%s", rec.output())
				}
			}()
			checkIce(t, d, readIce(t, cat, "default."+loader.TableName(d.topic)), offsets, 600)
			checkAudit(t, c, cfg.Name, map[string]int64{d.topic: 600})
			if t.Failed() {
				t.Logf("crashing run:\n%s", ch.output())
				logSnapshots(t, cat, "default."+loader.TableName(d.topic))
			}
		})
	}
}

// logSnapshots logs the table's snapshots: operation, offsets, and the
// sequence number and range of the loader's state in each.
func logSnapshots(t *testing.T, cat icereader.Catalog, table string) {
	md := icereader.ReadMetadata(t, cat, table)
	for _, s := range md.Snapshots {
		var keys []string
		for k, v := range s.Summary {
			if strings.HasPrefix(k, icetable.OriginKeyPrefix) {
				var m loader.Manifest
				_ = json.Unmarshal([]byte(v), &m)
				v = fmt.Sprintf("seq %d %d-%d", m.Seq, m.FirstOffset, m.NextOffset)
			}
			if strings.HasPrefix(k, "tributary.") || k == "operation" || k == "added-records" || k == "added-data-files" {
				keys = append(keys, k+"="+v)
			}
		}
		sort.Strings(keys)
		t.Logf("snapshot %d (parent %d): %v", s.ID, s.ParentID, keys)
	}
}

// TestIcebergMirrorReplay delivers source offsets twice, as a restarted
// mirror does, within one load and across loads (the origin marks then
// come back from the table's snapshot): pyiceberg reads each record once.
func TestIcebergMirrorReplay(t *testing.T) {
	c := newCluster(t)
	d := iceData{topic: "icemirror", partitions: 2}
	c.CreateTopic(t, d.topic, d.partitions)
	mirrored := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			val := d.value(i)
			delete(val, "ref")
			v, err := c.ser.Encode(context.Background(), d.topic+"-value", typesV1, val)
			if err != nil {
				t.Fatal(err)
			}
			p := int32(i) % d.partitions
			recs = append(recs, &kgo.Record{Topic: d.topic, Partition: p, Value: v, Timestamp: d.ts(i),
				Headers: []kgo.RecordHeader{{Key: origin.Header, Value: origin.Append(nil, "dc1", p, int64(i/int(d.partitions)))}}})
		}
		return recs
	}
	cfg, cat, _ := iceConfig(t, c, "icemirror", d.topic)
	cfg.CommitRecords = 150
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func() loader.Summary { t.Helper(); return runInProcess(t, ctx, cfg) }
	c.produce(t, mirrored(0, 600))
	c.produce(t, mirrored(400, 700)) // replay inside the next load
	if sum := run(); sum.Records != 700 || sum.Duplicates != 200 {
		t.Fatalf("first run %+v, want 700 records and 200 duplicates", sum)
	}
	c.produce(t, mirrored(650, 1000)) // replay across loads
	if sum := run(); sum.Records != 300 || sum.Duplicates != 50 {
		t.Fatalf("second run %+v, want 300 records and 50 duplicates", sum)
	}
	got := readIce(t, cat, "default."+loader.TableName(d.topic)) // each id once
	for i := 0; i < 1000; i++ {
		if r := got[int64(i)]; r == nil || r["name"] != fmt.Sprintf("name-%d", i) {
			t.Fatalf("record %d: %v", i, r)
		}
	}
	if len(got) != 1000 {
		t.Fatalf("table holds %d records, want 1000", len(got))
	}
	checkAudit(t, c, cfg.Name, map[string]int64{d.topic: 1000})
}

// TestIcebergHiveSpark loads into Iceberg's Hive catalog on the test
// metastore (warehouse on file://, which both readers can read) and
// counts the records per hour with Spark: each hour holds exactly the
// records produced in it, and the table is partitioned by those hours.
func TestIcebergHiveSpark(t *testing.T) {
	uri := os.Getenv("TRIBUTARY_TEST_HIVE_METASTORE")
	if uri == "" {
		t.Fatal("TRIBUTARY_TEST_HIVE_METASTORE is not set (source the test servers' environment)")
	}
	c := newCluster(t)
	d := iceData{topic: "ice-hive", partitions: 3}
	c.CreateTopic(t, d.topic, d.partitions)
	const n = 1200 // 7 s apart: 2h20m, over three hours
	c.produceIce(t, d, 0, n, nil)
	want := map[int64]int64{}
	for i := 0; i < n; i++ {
		want[d.ts(i).Unix()/3600]++
	}
	cat := icereader.HiveCatalog("hc", uri, "file://"+filepath.Join(t.TempDir(), "warehouse"))
	ns := icereader.Namespace(t, cat, "loadice")
	cfg := baseConfig(c, "icehive", d.topic, "file://"+filepath.Join(t.TempDir(), "out"))
	cfg.TableFormat = loader.FormatIceberg
	cfg.Iceberg = icetable.Config{Type: icetable.CatalogHive, URI: uri, Warehouse: cat.Warehouse, Namespace: ns}
	cfg.CommitRecords = 250
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if sum := runInProcess(t, ctx, cfg); sum.Records != n {
		t.Fatalf("run: %+v, want %d records", sum, n)
	}
	table := "hc." + ns + "." + loader.TableName(d.topic)
	s := icereader.NewSpark(t, cat)
	res := s.SQL("SELECT CAST(unix_timestamp(_kafka.timestamp) DIV 3600 AS BIGINT) AS h, count(*) AS n, count(DISTINCT id) AS ids FROM " +
		table + " GROUP BY 1")
	got := map[int64]int64{}
	for _, r := range res.Rows {
		h, cnt, ids := r["h"].(int64), r["n"].(int64), r["ids"].(int64)
		if cnt != ids {
			t.Errorf("hour %d: %d records of %d ids", h, cnt, ids)
		}
		got[h] = cnt
	}
	if len(got) != len(want) {
		t.Errorf("Spark counted hours %v, want %v", got, want)
	}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("hour %s: Spark counted %d records, want %d", time.Unix(h*3600, 0).UTC(), got[h], w)
		}
	}
	parts := s.SQL("SELECT count(*) AS n FROM " + table + ".partitions")
	if len(parts.Rows) != 1 || parts.Rows[0]["n"].(int64) != int64(len(want)) {
		t.Errorf("partitions %v, want %d hours", parts.Rows, len(want))
	}
}

// TestIcebergConfig: table.format and the catalog keys are checked when the
// job starts, each error naming its key.
func TestIcebergConfig(t *testing.T) {
	base := map[string]string{"name": "j", "bootstrap.servers": "localhost:9092", "schema.registry.url": "http://localhost:8081",
		"topics": "t", "output.uri": "file:///tmp/out"}
	for _, tc := range []struct {
		props map[string]string
		want  []string // substrings of the error; none: valid
	}{
		{map[string]string{"table.format": "icebreg"}, []string{"table.format", "icebreg", "avro", "iceberg"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.uri": "/tmp/c.db", "iceberg.catalog.warehouse": "file:///tmp/w"},
			[]string{"iceberg.catalog.type", "sql", "hive"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "hive", "iceberg.catalog.warehouse": "file:///tmp/w"},
			[]string{"iceberg.catalog.uri", "thrift://"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "glue", "iceberg.catalog.warehouse": "file:///tmp/w"},
			[]string{"iceberg.catalog.type", "glue"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "sql", "iceberg.catalog.uri": "/tmp/c.db"},
			[]string{"iceberg.catalog.warehouse"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "sql", "iceberg.catalog.uri": "/tmp/c.db",
			"iceberg.catalog.warehouse": "file:///tmp/w", "path.format": "'dt'=YYYY-MM-dd"}, []string{"path.format"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "sql", "iceberg.catalog.uri": "/tmp/c.db",
			"iceberg.catalog.warehouse": "file:///tmp/w", "iceberg.tables.default-partition-by": "days(at)"},
			[]string{"iceberg.tables.default-partition-by"}},
		{map[string]string{"table.format": "iceberg", "iceberg.catalog.type": "sql", "iceberg.catalog.uri": "/tmp/c.db",
			"iceberg.catalog.warehouse": "file:///tmp/w"}, nil},
		{map[string]string{"table.format": "Avro"}, nil},
	} {
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		for k, v := range tc.props {
			props[k] = v
		}
		cfg, unknown, err := loader.ConfigFromProperties(props)
		if len(unknown) > 0 {
			t.Errorf("%v: unknown keys %v", tc.props, unknown)
		}
		if tc.want == nil {
			if err != nil {
				t.Errorf("%v: %v", tc.props, err)
			} else if tc.props["table.format"] == "iceberg" && cfg.Iceberg.Type != icetable.CatalogSQL {
				t.Errorf("%v: catalog %+v", tc.props, cfg.Iceberg)
			}
			continue
		}
		if !errors.Is(err, loader.ErrInvalidConfig) {
			t.Errorf("%v: err = %v, want ErrInvalidConfig", tc.props, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %q", tc.props, err, w)
			}
		}
	}
}
