package icereader_test

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/icereader"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

var (
	t1 = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	t2 = time.Date(1960, 6, 30, 23, 59, 59, 999999000, time.UTC)
	t3 = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

const hiveColumns = `id int, l bigint, f float, d double, dec decimal(10,2), s string, b binary,
	dt date, ts timestamp, tsn timestamp_ntz, st struct<a:int, b:string, inner:struct<x:double>>,
	li array<int>, m map<string,int>`

// The rows Spark inserts into the Hive-catalog table: two in the first
// commit, one in the second.
const (
	hiveInsert1 = `(1, 9007199254740993, float('NaN'), double('-Infinity'), 12.34, 'héllo ✓', X'00FF10',
	date'1969-12-31', timestamp'2026-01-02 03:04:05.123456', timestamp_ntz'2026-01-02 03:04:05.123456',
	named_struct('a', 1, 'b', 'y', 'inner', named_struct('x', 2.5D)), array(1, null, 3), map('k1', 1, 'k2', null)),
	(2, null, null, null, null, null, null, null, null, null, null, null, null)`
	hiveInsert2 = `(3, CAST('-9223372036854775808' AS BIGINT), float(1.5), double('NaN'), -0.01, '', X'',
	date'2262-04-12', timestamp'1960-06-30 23:59:59.999999', timestamp_ntz'9999-12-31 23:59:59.999999',
	named_struct('a', CAST(NULL AS INT), 'b', CAST(NULL AS STRING), 'inner', CAST(NULL AS STRUCT<x: DOUBLE>)),
	CAST(array() AS ARRAY<INT>), CAST(map() AS MAP<STRING,INT>))`
)

// hiveRows are hiveInsert1 and hiveInsert2 as both readers should give them.
func hiveRows() []map[string]any {
	nulls := func(id int32) map[string]any {
		r := map[string]any{"id": id}
		for _, c := range []string{"l", "f", "d", "dec", "s", "b", "dt", "ts", "tsn", "st", "li", "m"} {
			r[c] = nil
		}
		return r
	}
	return []map[string]any{
		{
			"id": int32(1), "l": int64(9007199254740993), "f": float32(math.NaN()), "d": math.Inf(-1),
			"dec": icereader.Decimal("12.34"), "s": "héllo ✓", "b": []byte{0, 0xff, 0x10},
			"dt": icereader.Date(-1), "ts": icereader.InstantOf(t1), "tsn": icereader.LocalOf(t1),
			"st": map[string]any{"a": int32(1), "b": "y", "inner": map[string]any{"x": 2.5}},
			"li": []any{int32(1), nil, int32(3)},
			"m":  []icereader.MapEntry{{Key: "k1", Value: int32(1)}, {Key: "k2", Value: nil}},
		},
		nulls(2),
		{
			"id": int32(3), "l": int64(math.MinInt64), "f": float32(1.5), "d": math.NaN(),
			"dec": icereader.Decimal("-0.01"), "s": "", "b": []byte{},
			"dt": icereader.DateOf(time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC)),
			"ts": icereader.InstantOf(t2), "tsn": icereader.LocalOf(t3),
			"st": map[string]any{"a": nil, "b": nil, "inner": nil},
			"li": []any{}, "m": []icereader.MapEntry{},
		},
	}
}

var hiveTypes = []icereader.Column{
	{Name: "id", Type: "int32"}, {Name: "l", Type: "int64"}, {Name: "f", Type: "float32"},
	{Name: "d", Type: "float64"}, {Name: "dec", Type: "decimal(10,2)"}, {Name: "s", Type: "string"},
	{Name: "b", Type: "binary"}, {Name: "dt", Type: "date"}, {Name: "ts", Type: "timestamptz"},
	{Name: "tsn", Type: "timestamp"}, {Name: "st", Type: "struct<a:int32,b:string,inner:struct<x:float64>>"},
	{Name: "li", Type: "list<int32>"}, {Name: "m", Type: "map<string,int32>"},
}

func checkRows(t *testing.T, reader string, want []map[string]any, got icereader.Result, types []icereader.Column) {
	t.Helper()
	icereader.SortRows(got.Rows, "id")
	if d := icereader.DiffRows(want, got.Rows); d != "" {
		t.Errorf("%s read other values:\n%s", reader, d)
	}
	if types != nil && !slices.Equal(got.Columns, types) {
		t.Errorf("%s's columns: %v, want %v", reader, got.Columns, types)
	}
}

// TestHiveCatalog: a table Spark writes through the Hive catalog on the
// test metastore (partitioned by hours(ts), warehouse on file://), read
// value by value by Spark and by pyiceberg, with its snapshots (time
// travel, summaries, Spark's procedures) and properties; and a table on
// the test HDFS, which Spark reads (pyiceberg cannot here).
func TestHiveCatalog(t *testing.T) {
	uri := testenv.HiveMetastore(t)
	hdfs := testenv.HDFS(t)
	dir := t.TempDir()
	cat := icereader.HiveCatalog("hc", uri, "file://"+filepath.Join(dir, "warehouse"))
	db := icereader.Namespace(t, cat, "icereader")
	table := db + ".t"
	began := time.Now()
	s := icereader.NewSpark(t, cat)
	t.Logf("Spark %s started in %v", s.Version, time.Since(began))
	t.Cleanup(func() {
		// Its files on HDFS (Namespace's cleanup drops the rest).
		if _, err := s.Query("DROP TABLE IF EXISTS hc." + db + ".h PURGE"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	s.SQL("CREATE TABLE hc." + table + " (" + hiveColumns + ") USING iceberg PARTITIONED BY (hours(ts))")
	s.SQL("INSERT INTO hc." + table + " VALUES " + hiveInsert1)
	s.SQL("INSERT INTO hc." + table + " VALUES " + hiveInsert2)
	s.SQL("ALTER TABLE hc." + table + " SET TBLPROPERTIES ('tributary.watermark' = '2026-01-02T04:00:00Z')")
	want := hiveRows()

	checkRows(t, "Spark", want, s.SQL("SELECT * FROM hc."+table), hiveTypes)
	checkRows(t, "pyiceberg", want, icereader.ReadPyIceberg(t, cat, table), hiveTypes)

	md := icereader.ReadMetadata(t, cat, table)
	if len(md.Snapshots) != 2 {
		t.Fatalf("%d snapshots, want 2: %+v", len(md.Snapshots), md.Snapshots)
	}
	if want := filepath.Join(dir, "warehouse", db+".db", "t"); !strings.HasSuffix(md.Location, want) {
		t.Errorf("the table is at %s, want %s (its namespace's location)", md.Location, want)
	}
	first, second := md.Snapshots[0], md.Snapshots[1]
	if cur, ok := md.Current(); !ok || cur.ID != second.ID || second.ParentID != first.ID || first.ParentID != 0 {
		t.Errorf("current snapshot %d (%v), want %d; parents %d, %d", md.CurrentSnapshotID, ok, second.ID, first.ParentID, second.ParentID)
	}
	for i, n := range []string{"2", "1"} {
		if sum := md.Snapshots[i].Summary; sum["operation"] != "append" || sum["added-records"] != n {
			t.Errorf("snapshot %d's summary %v, want an append of %s records", i, sum, n)
		}
	}
	// Spark's view of the snapshots: its metadata table.
	snaps := s.SQL("SELECT snapshot_id, operation, summary FROM hc." + table + ".snapshots ORDER BY committed_at")
	if len(snaps.Rows) != 2 || snaps.Rows[0]["snapshot_id"] != first.ID || snaps.Rows[1]["snapshot_id"] != second.ID {
		t.Errorf("Spark's snapshots: %v", snaps.Rows)
	} else if sum := snaps.Rows[1]["summary"].([]icereader.MapEntry); !slices.Contains(sum, icereader.MapEntry{Key: "added-records", Value: "1"}) {
		t.Errorf("Spark's summary of the second snapshot: %v", sum)
	}
	if w := md.Properties["tributary.watermark"]; w != "2026-01-02T04:00:00Z" || md.FormatVersion != 2 {
		t.Errorf("format version %d, properties %v", md.FormatVersion, md.Properties)
	}

	// Time travel, filters and projections, by both readers.
	checkRows(t, "pyiceberg at the first snapshot", want[:2], icereader.ReadPyIceberg(t, cat, table, icereader.AtSnapshot(first.ID)), nil)
	checkRows(t, "Spark at the first snapshot", want[:2], s.SQL(fmt.Sprintf("SELECT * FROM hc.%s VERSION AS OF %d", table, first.ID)), nil)
	checkRows(t, "pyiceberg where id = 3, id and s", []map[string]any{{"id": int32(3), "s": ""}},
		icereader.ReadPyIceberg(t, cat, table, icereader.Where("id = 3"), icereader.Select("id", "s")),
		[]icereader.Column{{Name: "id", Type: "int32"}, {Name: "s", Type: "string"}})

	// Spark's procedures: compaction replaces the files, the rows stay.
	res := s.SQL("CALL hc.system.rewrite_data_files(table => '" + table + "', options => map('rewrite-all', 'true'))")
	t.Logf("rewrite_data_files: %v", res.Rows)
	md = icereader.ReadMetadata(t, cat, table)
	if cur, _ := md.Current(); cur.Summary["operation"] != "replace" || len(md.Snapshots) != 3 {
		t.Errorf("after rewrite_data_files: %d snapshots, current %v", len(md.Snapshots), cur.Summary)
	}
	checkRows(t, "pyiceberg after rewrite_data_files", want, icereader.ReadPyIceberg(t, cat, table), hiveTypes)
	s.SQL(fmt.Sprintf("CALL hc.system.expire_snapshots(table => '%s', older_than => TIMESTAMP '%s', retain_last => 1)",
		table, time.Now().Add(time.Hour).UTC().Format(time.DateTime)))
	if md = icereader.ReadMetadata(t, cat, table); len(md.Snapshots) != 1 || md.Snapshots[0].ID != md.CurrentSnapshotID {
		t.Errorf("after expire_snapshots: snapshots %+v, current %d", md.Snapshots, md.CurrentSnapshotID)
	}
	if _, err := s.Query("SELECT no_such_column FROM hc." + table); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Errorf("a bad query: %v, want Spark's error", err)
	}

	// A table on HDFS: Spark's Hadoop client reads and writes it.
	loc := fmt.Sprintf("hdfs://%s/icereader/%s/h", hdfs, db)
	s.SQL("CREATE TABLE hc." + db + ".h (id bigint, ts timestamp) USING iceberg PARTITIONED BY (hours(ts)) LOCATION '" + loc + "'")
	s.SQL("INSERT INTO hc." + db + ".h VALUES (7, timestamp'2026-01-02 03:04:05.123456')")
	checkRows(t, "Spark on HDFS", []map[string]any{{"id": int64(7), "ts": icereader.InstantOf(t1)}}, s.SQL("SELECT * FROM hc."+db+".h"), nil)
}
