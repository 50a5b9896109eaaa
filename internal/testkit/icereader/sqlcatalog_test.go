package icereader_test

import (
	"encoding/hex"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/icereader"
)

// writeSQLTable makes namespace db and table db.t (partitioned by
// hours(ts)) with pyiceberg, appends two rows with snapshot properties and
// returns the snapshot's id.
const writeSQLTable = `
import datetime, decimal, uuid
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import *
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import HourTransform
schema = Schema(
    NestedField(1, "id", LongType(), required=True), NestedField(2, "i", IntegerType()),
    NestedField(3, "f", FloatType()), NestedField(4, "d", DoubleType()), NestedField(5, "dec", DecimalType(38, 9)),
    NestedField(6, "s", StringType()), NestedField(7, "b", BinaryType()), NestedField(8, "fx", FixedType(4)),
    NestedField(9, "dt", DateType()), NestedField(10, "ts", TimestamptzType()), NestedField(11, "tsn", TimestampType()),
    NestedField(13, "u", UUIDType()), NestedField(14, "bo", BooleanType()),
    NestedField(15, "st", StructType(NestedField(20, "a", IntegerType()), NestedField(21, "l", ListType(22, StringType(), element_required=False)))),
    NestedField(16, "m", MapType(23, StringType(), 24, LongType(), value_required=False)))
catalog.create_namespace("db")
tbl = catalog.create_table("db.t", schema=schema,
    partition_spec=PartitionSpec(PartitionField(source_id=10, field_id=1000, transform=HourTransform(), name="ts_hour")),
    properties={"tributary.watermark": "1767326400000"})
utc = datetime.timezone.utc
rows = [
    {"id": 1, "i": -7, "f": float("inf"), "d": float("nan"), "dec": decimal.Decimal("-12345678901234567890.123456789"),
     "s": "naïve", "b": b"\x00\x01", "fx": b"\xde\xad\xbe\xef", "dt": datetime.date(2026, 1, 2),
     "ts": datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=utc), "tsn": datetime.datetime(2026, 1, 2, 3, 4, 5, 123456),
     "u": uuid.UUID("12345678-1234-5678-1234-567812345678").bytes, "bo": True,
     "st": {"a": 5, "l": ["x", None]}, "m": [("k", 9223372036854775807)]},
    {"id": 2, "i": None, "f": None, "d": None, "dec": None, "s": None, "b": None, "fx": None, "dt": None, "ts": None,
     "tsn": None, "u": None, "bo": None, "st": None, "m": None},
]
tbl.append(pa.Table.from_pylist(rows, schema=tbl.schema().as_arrow()), snapshot_properties={"tributary.offsets": "0:0-41"})
result = tbl.metadata.current_snapshot_id
# Spark loads no table with a time column: that type gets one of its own.
times = catalog.create_table("db.times", schema=Schema(NestedField(1, "tm", TimeType())))
times.append(pa.Table.from_pylist([{"tm": datetime.time(23, 59, 59, 999999)}, {"tm": datetime.time(0, 0)}, {"tm": None}],
    schema=times.schema().as_arrow()))
`

// TestSQLCatalog: a table pyiceberg writes through a SQL catalog on a
// SQLite file (warehouse on file://), read back value by value by
// pyiceberg and by Spark's JdbcCatalog on the same file.
func TestSQLCatalog(t *testing.T) {
	dir := t.TempDir()
	cat := icereader.SQLCatalog("tributary", filepath.Join(dir, "catalog.db"), "file://"+filepath.Join(dir, "warehouse"))
	var snapshot int64
	icereader.PyIcebergScript(t, cat, writeSQLTable, nil, &snapshot)

	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	fixed, _ := hex.DecodeString("deadbeef")
	row1 := map[string]any{
		"id": int64(1), "i": int32(-7), "f": float32(math.Inf(1)), "d": math.NaN(),
		"dec": icereader.Decimal("-12345678901234567890.123456789"), "s": "naïve", "b": []byte{0, 1}, "fx": fixed,
		"dt": icereader.DateOf(ts), "ts": icereader.InstantOf(ts), "tsn": icereader.LocalOf(ts),
		"u": icereader.UUID("12345678-1234-5678-1234-567812345678"), "bo": true,
		"st": map[string]any{"a": int32(5), "l": []any{"x", nil}},
		"m":  []icereader.MapEntry{{Key: "k", Value: int64(math.MaxInt64)}},
	}
	row2 := map[string]any{"id": int64(2)}
	for c := range row1 {
		if c != "id" {
			row2[c] = nil
		}
	}
	want := []map[string]any{row1, row2}
	checkRows(t, "pyiceberg", want, icereader.ReadPyIceberg(t, cat, "db.t"), []icereader.Column{
		{Name: "id", Type: "int64"}, {Name: "i", Type: "int32"}, {Name: "f", Type: "float32"}, {Name: "d", Type: "float64"},
		{Name: "dec", Type: "decimal(38,9)"}, {Name: "s", Type: "string"}, {Name: "b", Type: "binary"},
		{Name: "fx", Type: "binary"}, {Name: "dt", Type: "date"}, {Name: "ts", Type: "timestamptz"},
		{Name: "tsn", Type: "timestamp"}, {Name: "u", Type: "uuid"}, {Name: "bo", Type: "bool"},
		{Name: "st", Type: "struct<a:int32,l:list<string>>"}, {Name: "m", Type: "map<string,int64>"},
	})
	md := icereader.ReadMetadata(t, cat, "db.t")
	cur, ok := md.Current()
	if !ok || cur.ID != snapshot || cur.Summary["operation"] != "append" || cur.Summary["tributary.offsets"] != "0:0-41" ||
		md.Properties["tributary.watermark"] != "1767326400000" {
		t.Errorf("snapshot %d (want %d) of summary %v; properties %v", cur.ID, snapshot, cur.Summary, md.Properties)
	}

	times := icereader.ReadPyIceberg(t, cat, "db.times")
	icereader.SortRows(times.Rows, "tm")
	if d := icereader.DiffRows([]map[string]any{{"tm": nil}, {"tm": icereader.TimeOfDay(0)}, {"tm": icereader.TimeOfDay(86400e6 - 1)}}, times.Rows); d != "" {
		t.Errorf("pyiceberg read other times:\n%s", d)
	}

	// Spark reads a UUID as a string.
	got := icereader.ReadSpark(t, cat, "db.t")
	for _, r := range want {
		if u, ok := r["u"].(icereader.UUID); ok {
			r["u"] = string(u)
		}
	}
	checkRows(t, "Spark", want, got, nil)
}
