package icetable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/icereader"
)

const typesSchema = `{"type":"record","name":"Event","namespace":"t","fields":[
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"s","type":"string"},
 {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
 {"name":"by","type":"bytes"},
 {"name":"fx","type":{"type":"fixed","name":"Four","size":4}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"fdec","type":{"type":"fixed","name":"FDec","size":8,"logicalType":"decimal","precision":18,"scale":3}},
 {"name":"dt","type":{"type":"int","logicalType":"date"}},
 {"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tmu","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"rec","type":{"type":"record","name":"Inner","fields":[{"name":"a","type":"int"},{"name":"c","type":["null","string"]}]}},
 {"name":"arr","type":{"type":"array","items":"long"}},
 {"name":"recs","type":{"type":"array","items":"Inner"}},
 {"name":"mp","type":{"type":"map","values":"double"}},
 {"name":"opt","type":["null","string"],"default":null},
 {"name":"multi","type":["null","int","string"],"default":null},
 {"name":"u","type":{"type":"string","logicalType":"uuid"}},
 {"name":"dec38","type":{"type":"fixed","name":"Dec16","size":16,"logicalType":"decimal","precision":38,"scale":6}},
 {"name":"ltm","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"deep","type":["null",{"type":"record","name":"Deep","fields":[{"name":"x","type":"double"},{"name":"in","type":["null","Inner"],"default":null}]}],"default":null},
 {"name":"mp_rec","type":{"type":"map","values":"Inner"}}
]}`

func typesRecord(n int, base time.Time) (map[string]any, map[string]any) {
	ts := base.Add(time.Duration(n) * 1500 * time.Millisecond).Truncate(time.Millisecond)
	tsu := base.Add(time.Duration(n)*time.Second + 123456*time.Microsecond).Truncate(time.Microsecond)
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
	var opt, multi any
	var optWant, multiWant any
	if n%2 == 0 {
		opt, optWant = map[string]any{"string": "o" + string(rune('a'+n))}, "o"+string(rune('a'+n))
	}
	switch n % 3 {
	case 1:
		multi, multiWant = map[string]any{"int": int32(n)}, map[string]any{"member0": int32(n), "member1": nil}
	case 2:
		multi, multiWant = map[string]any{"string": "m"}, map[string]any{"member0": nil, "member1": "m"}
	}
	v := map[string]any{
		"b": n%2 == 0, "i": int32(-n), "l": int64(n) << 40, "f": float32(n) + 0.5, "d": float64(n) / 3,
		"s": "héllo " + string(rune('A'+n)), "e": []string{"RED", "GREEN"}[n%2],
		"by": []byte{byte(n), 0, 255}, "fx": []byte{1, 2, 3, byte(n)},
		"dec": big.NewRat(int64(12345+n), 100), "fdec": big.NewRat(int64(-123456789-n), 1000),
		"dt": day, "tm": time.Duration(n)*time.Hour + 4*time.Millisecond, "tmu": 5*time.Minute + time.Duration(n)*time.Microsecond,
		"ts": ts, "tsu": tsu, "lts": int64(1700000000123456 + n),
		"rec":  map[string]any{"a": int32(n), "c": map[string]any{"string": "c"}},
		"arr":  []any{int64(n), int64(n + 1)},
		"recs": []any{map[string]any{"a": int32(7), "c": nil}},
		"mp":   map[string]any{"x": 1.5, "y": float64(n)},
		"opt":  opt, "multi": multi,
		"u":      "123e4567-e89b-12d3-a456-42661417400" + string(rune('0'+n%10)),
		"dec38":  new(big.Rat).SetFrac(dec38(n), big.NewInt(1000000)),
		"ltm":    int64(1700000000123 + n),
		"deep":   deep(n),
		"mp_rec": map[string]any{"k": map[string]any{"a": int32(n), "c": nil}},
	}
	tod := func(d time.Duration) icereader.TimeOfDay { return icereader.TimeOfDay(d.Microseconds()) }
	want := map[string]any{
		"b": n%2 == 0, "i": int32(-n), "l": int64(n) << 40, "f": float32(n) + 0.5, "d": float64(n) / 3,
		"s": "héllo " + string(rune('A'+n)), "e": []string{"RED", "GREEN"}[n%2],
		"by": []byte{byte(n), 0, 255}, "fx": []byte{1, 2, 3, byte(n)},
		"dec": decString(int64(12345+n), 2), "fdec": decString(int64(-123456789-n), 3),
		"dt": icereader.DateOf(day), "tm": tod(time.Duration(n)*time.Hour + 4*time.Millisecond),
		"tmu": tod(5*time.Minute + time.Duration(n)*time.Microsecond),
		"ts":  icereader.InstantOf(ts), "tsu": icereader.InstantOf(tsu), "lts": icereader.Timestamp{Micros: 1700000000123456 + int64(n)},
		"rec":  map[string]any{"a": int32(n), "c": "c"},
		"arr":  []any{int64(n), int64(n + 1)},
		"recs": []any{map[string]any{"a": int32(7), "c": nil}},
		"mp":   []icereader.MapEntry{{Key: "x", Value: 1.5}, {Key: "y", Value: float64(n)}},
		"opt":  optWant, "multi": multiWant,
		"u":      "123e4567-e89b-12d3-a456-42661417400" + string(rune('0'+n%10)),
		"dec38":  icereader.Decimal(new(big.Rat).SetFrac(dec38(n), big.NewInt(1000000)).FloatString(6)),
		"ltm":    icereader.Timestamp{Micros: (1700000000123 + int64(n)) * 1000},
		"deep":   deepWant(n),
		"mp_rec": []icereader.MapEntry{{Key: "k", Value: map[string]any{"a": int32(n), "c": nil}}},
	}
	return v, want
}

// dec38 is a 38-digit unscaled value, negative for odd n.
func dec38(n int) *big.Int {
	v, _ := new(big.Int).SetString("12345678901234567890123456789012345678", 10)
	v.Sub(v, big.NewInt(int64(n)))
	if n%2 == 1 {
		v.Neg(v)
	}
	return v
}

func deep(n int) any {
	switch n % 3 {
	case 0:
		return nil
	case 1:
		return map[string]any{"t.Deep": map[string]any{"x": 0.25, "in": nil}}
	}
	return map[string]any{"t.Deep": map[string]any{"x": -1.5, "in": map[string]any{"t.Inner": map[string]any{"a": int32(n), "c": map[string]any{"string": "d"}}}}}
}

func deepWant(n int) any {
	switch n % 3 {
	case 0:
		return nil
	case 1:
		return map[string]any{"x": 0.25, "in": nil}
	}
	return map[string]any{"x": -1.5, "in": map[string]any{"a": int32(n), "c": "d"}}
}

// appendTypes appends n records of every type in batches of per records,
// partitions alternating, and returns what a reader must see.
func appendTypes(t *testing.T, tbl *Table, n, per int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := time.Date(2024, 5, 1, 22, 59, 0, 0, time.UTC)
	next := map[int32]int64{}
	var wants []map[string]any
	var batch Batch
	flush := func() {
		batch.Offsets = map[int32]int64{}
		for p, o := range next {
			batch.Offsets[p] = o
		}
		batch.Origins = map[int32]string{}
		for p := range next {
			batch.Origins[p] = fmt.Sprintf("origin-%d-%d", p, len(wants))
		}
		if err := tbl.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch = Batch{}
	}
	for i := 0; i < n; i++ {
		p := int32(i % 2)
		v, want := typesRecord(i, base)
		kts := base.Add(time.Duration(i) * 20 * time.Minute).Truncate(time.Millisecond)
		batch.Records = append(batch.Records, Record{Partition: p, Offset: next[p], Timestamp: kts, Value: native(t, tbl.avro, v)})
		want["_kafka"] = kafkaMeta(p, next[p], kts)
		next[p]++
		wants = append(wants, want)
		if len(batch.Records) == per {
			flush()
		}
	}
	if len(batch.Records) > 0 {
		flush()
	}
	return sortWants(wants)
}

func sortWants(w []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(w))
	for _, p := range []int32{0, 1} {
		for _, r := range w {
			if r["_kafka"].(map[string]any)["partition"] == p {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestAppendTypesPyiceberg(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "events.types", "events_types", mustSchema(t, typesSchema))
	if err != nil {
		t.Fatal(err)
	}
	want := appendTypes(t, tbl, 10, 4)
	got := pyRead(t, cat, "events_types")
	diffRows(t, want, got)
	if len(got) > 1 {
		t.Logf("row 1 as pyiceberg read it: %v", got[1])
	}
	c, err := tbl.Committed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Offsets[0] != 5 || c.Offsets[1] != 5 || c.Origins[0] != "origin-0-10" || c.Origins[1] != "origin-1-10" {
		t.Errorf("committed %+v, want 5/5 and origin-*-10", c)
	}
	// Three appends, three snapshots.
	if n := len(tbl.Iceberg().Metadata().Snapshots()); n != 3 {
		t.Errorf("%d snapshots, want 3", n)
	}
	if cat.Retries() != 0 {
		t.Errorf("%d retries without a conflict", cat.Retries())
	}
}

func TestTypeChangeRefused(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string"}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"int"}]}`
	if _, err := cat.Table(ctx, "tc", "tc", mustSchema(t, v1)); err != nil {
		t.Fatal(err)
	}
	_, err := cat.Table(ctx, "tc", "tc", mustSchema(t, v2))
	if !errors.Is(err, ErrTypeChange) {
		t.Fatalf("err %v, want ErrTypeChange", err)
	}
	for _, s := range []string{"topic tc", "field b", "string", "int"} {
		if !contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// partitionHours returns, per data file of the table, its partition value
// (hours since the epoch) and record count.
func partitionHours(t *testing.T, tbl *Table) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scan := tbl.Iceberg().Scan()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Iceberg().Spec()
	fid := spec.Field(0).FieldID
	out := map[int32]int64{}
	for _, task := range tasks {
		h, ok := task.File.Partition()[fid].(int32)
		if !ok {
			t.Fatalf("file %s: partition %v", task.File.FilePath(), task.File.Partition())
		}
		out[h] += task.File.Count()
	}
	return out
}

func TestPartitionByHour(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		field, name string
		hourOf      func(i int, kts time.Time) time.Time
	}{
		{"", "_kafka_timestamp_hour", func(_ int, kts time.Time) time.Time { return kts }},
		{"tsu", "tsu_hour", func(i int, _ time.Time) time.Time {
			return time.Date(2024, 5, 1, 22, 59, 0, 0, time.UTC).Add(time.Duration(i)*time.Second + 123456*time.Microsecond)
		}},
	} {
		cat := newCatalog(t, func(c *Config) { c.PartitionField = tc.field })
		tbl, err := cat.Table(ctx, "p", "p", mustSchema(t, typesSchema))
		if err != nil {
			t.Fatal(err)
		}
		spec := tbl.Iceberg().Spec()
		if got := spec.Field(0).Name; got != tc.name {
			t.Errorf("partition field %q, want %q", got, tc.name)
		}
		rows := appendTypes(t, tbl, 10, 4)
		want := map[int32]int64{}
		base := time.Date(2024, 5, 1, 22, 59, 0, 0, time.UTC)
		for i := range rows {
			kts := base.Add(time.Duration(i) * 20 * time.Minute)
			want[int32(tc.hourOf(i, kts).Unix()/3600)]++
		}
		got := partitionHours(t, tbl)
		if !maps.Equal(got, want) {
			t.Errorf("records per hour %s: got %v, want %v", tc.name, got, want)
		}
	}
}

// A value that does not match the schema fails Append with ErrValue, and
// nothing is committed.
func TestBadValueRefused(t *testing.T) {
	cat := newCatalog(t, nil)
	ctx := context.Background()
	tbl, err := cat.Table(ctx, "bad", "bad", mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMilli(1714600000000)
	err = tbl.Append(ctx, Batch{Records: []Record{
		{Partition: 0, Offset: 0, Timestamp: ts, Value: map[string]any{"a": int64(1)}},
		{Partition: 0, Offset: 1, Timestamp: ts, Value: map[string]any{"a": "one"}},
	}, Offsets: map[int32]int64{0: 2}})
	if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), "field a") {
		t.Fatalf("err %v, want ErrValue naming field a", err)
	}
	if s := tbl.Iceberg().CurrentSnapshot(); s != nil {
		t.Errorf("snapshot %d committed", s.SnapshotID)
	}
}
