package compact

import (
	"context"
	"encoding/hex"
	"math"
	"math/big"
	"path"
	"strings"
	"testing"

	"github.com/xitongsys/parquet-go-source/buffer"
	"github.com/xitongsys/parquet-go/common"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/reader"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

func TestDecimalEncoding(t *testing.T) {
	cases := []struct {
		rat         *big.Rat
		scale, size int
		want        string
	}{
		{big.NewRat(1234, 100), 2, 0, "04d2"},
		{big.NewRat(-15, 10), 1, 0, "f1"},
		{big.NewRat(-15, 10), 1, 4, "fffffff1"},
		{big.NewRat(128, 1), 0, 0, "0080"},
		{big.NewRat(-128, 1), 0, 0, "ff80"},
		{big.NewRat(0, 1), 3, 2, "0000"},
		{big.NewRat(255, 1), 0, 3, "0000ff"},
	}
	for _, c := range cases {
		v, err := decimalConv(c.scale, c.size)(c.rat)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString([]byte(v.(string))); got != c.want {
			t.Errorf("%v scale %d size %d: %s, want %s", c.rat, c.scale, c.size, got, c.want)
		}
	}
	if _, err := decimalConv(0, 1)(big.NewRat(1000, 1)); err == nil {
		t.Error("a decimal too large for its fixed size was accepted")
	}
}

func TestMappingRejectsWhatParquetCannotHold(t *testing.T) {
	c := &Compactor{}
	for schema, want := range map[string]string{
		`"string"`: "not a record",
		`{"type":"record","name":"E","fields":[]}`:                                                             "no fields",
		`{"type":"record","name":"N","fields":[{"name":"n","type":"N"}]}`:                                      "too deeply",
		`{"type":"record","name":"U","fields":[{"name":"u","type":["null"]}]}`:                                 "only null",
		`{"type":"record","name":"D","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal"}}]}`: "precision",
	} {
		_, _, err := c.mapping(schema)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", schema, err, want)
		}
	}
}

// TestParquetTypesFollowTheSpec: the footer of a compacted hour of
// testSchema carries no field ids, timestamp-millis as INT96 (Hive's
// serde reads no other timestamps), timestamp-micros as a UTC-adjusted
// TIMESTAMP, decimals of bytes as FIXED_LEN_BYTE_ARRAY of the fewest bytes
// for their precision, time-millis without a TIME annotation (Spark's
// reader refuses one) and the Avro writer schema under parquet-avro's key.
func TestParquetTypesFollowTheSpec(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeHours(t, fsys, base, "pv", hour0, 1, 1, 20)
	c, err := New(Config{FS: fsys, Base: base, ClosedThrough: closedAll})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	names := compactedFiles(t, fsys, dirs[0])
	b, err := filesys.ReadFile(fsys, path.Join(dirs[0], names[0]))
	if err != nil {
		t.Fatal(err)
	}
	src, err := buffer.NewBufferFile(b)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := reader.NewParquetReader(src, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.ReadStop()
	byName := map[string]*parquet.SchemaElement{}
	for i, el := range pr.SchemaHandler.SchemaElements {
		if el.FieldID != nil {
			t.Errorf("column %s has field_id %d", pr.SchemaHandler.Infos[i].ExName, *el.FieldID)
		}
		byName[pr.SchemaHandler.Infos[i].ExName] = el
	}
	if el := byName["ts"]; el.GetType() != parquet.Type_INT96 || el.LogicalType != nil || el.ConvertedType != nil {
		t.Errorf("ts (timestamp-millis): %v", el)
	}
	if el := byName["ts_us"]; el.GetType() != parquet.Type_INT64 || el.LogicalType.GetTIMESTAMP() == nil ||
		!el.LogicalType.GetTIMESTAMP().IsAdjustedToUTC || el.LogicalType.GetTIMESTAMP().Unit.MICROS == nil {
		t.Errorf("ts_us (timestamp-micros): %v", el)
	}
	if el := byName["price"]; el.GetType() != parquet.Type_FIXED_LEN_BYTE_ARRAY || el.GetTypeLength() != 5 ||
		el.GetConvertedType() != parquet.ConvertedType_DECIMAL || el.GetPrecision() != 10 || el.GetScale() != 2 {
		t.Errorf("price (decimal(10,2) of bytes): %v", el)
	}
	if el := byName["at"]; el.GetType() != parquet.Type_INT32 || el.LogicalType != nil || el.ConvertedType != nil {
		t.Errorf("at (time-millis): %v", el)
	}
	var avroSchema string
	for _, kv := range pr.Footer.KeyValueMetadata {
		if kv.Key == hours.ParquetAvroSchemaKey {
			avroSchema = kv.GetValue()
		}
	}
	if !strings.Contains(avroSchema, `"PageView"`) {
		t.Errorf("footer %s: %q", hours.ParquetAvroSchemaKey, avroSchema)
	}
	for p, want := range map[int]int{1: 1, 2: 1, 3: 2, 9: 4, 10: 5, 18: 8, 19: 9, 38: 16} {
		if got := decimalBytes(p); got != want {
			t.Errorf("decimalBytes(%d) = %d, want %d", p, got, want)
		}
	}
}

// TestStatisticsLeaveNaNOut: a page's float bounds skip NaN and give
// zeros as -0 (min) and +0 (max), as the format asks.
func TestStatisticsLeaveNaNOut(t *testing.T) {
	funcs := common.FindFuncTable(parquet.TypePtr(parquet.Type_DOUBLE), nil, nil)
	var lo, hi any
	for _, v := range []float64{math.NaN(), 0, 2.5, math.NaN(), -1} {
		lo, hi, _ = minMaxSize(funcs, lo, hi, v)
	}
	if lo.(float64) != -1 || hi.(float64) != 2.5 {
		t.Fatalf("bounds %v %v, want -1 2.5", lo, hi)
	}
	lo, hi = nil, nil
	for _, v := range []float64{0, math.NaN()} {
		lo, hi, _ = minMaxSize(funcs, lo, hi, v)
	}
	if !math.Signbit(lo.(float64)) || math.Signbit(hi.(float64)) {
		t.Fatalf("zero bounds %v %v, want -0 +0", lo, hi)
	}
}
