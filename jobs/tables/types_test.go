package tables

import (
	"errors"
	"strings"
	"testing"

	hms "github.com/beltran/gohive/hive_metastore"
	"github.com/linkedin/goavro/v2"
)

func TestColumnsMapAvroToHive(t *testing.T) {
	const schema = `{
 "type": "record", "name": "PageView", "namespace": "com.example",
 "fields": [
  {"name": "User", "type": "string"},
  {"name": "seq", "type": "long"},
  {"name": "count", "type": "int"},
  {"name": "score", "type": "double"},
  {"name": "ratio", "type": "float"},
  {"name": "ok", "type": "boolean"},
  {"name": "referrer", "type": ["null", "string"], "default": null},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "ts_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "attrs", "type": {"type": "map", "values": "long"}},
  {"name": "device", "type": {"type": "record", "name": "Device", "fields": [
     {"name": "os", "type": {"type": "enum", "name": "OS", "symbols": ["LINUX", "IOS"]}},
     {"name": "id", "type": {"type": "fixed", "name": "DeviceID", "size": 4}}]}},
  {"name": "prev", "type": ["null", "Device"], "default": null},
  {"name": "os2", "type": "com.example.OS"},
  {"name": "extra", "type": ["null", "string", "long"], "default": null},
  {"name": "payload", "type": "bytes"},
  {"name": "series", "type": {"type": "map", "values": {"type": "array", "items": ["null", "long"]}}}
 ]}`
	cols, err := columns(schema)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.Name+" "+c.Type)
	}
	want := []string{
		"user string", "seq bigint", "count int", "score double", "ratio float", "ok boolean",
		"referrer string", "ts timestamp", "ts_us bigint", "day date", "price decimal(10,2)",
		"tags array<string>", "attrs map<string,bigint>",
		"device struct<os:string,id:binary>", "prev struct<os:string,id:binary>", "os2 string",
		"extra struct<member0:string,member1:bigint>", "payload binary", "series map<string,array<bigint>>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("columns:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHiveLiteralRenamesSeveralTypeUnions: the literal of the table and
// its Avro partitions replaces a top-level union of several non-null
// types by <name>_members, a nullable record of members defaulting to
// null (Avro resolution then skips the written union), in its place; the
// columns show it as struct<member0,...>; a schema without one is kept.
func TestHiveLiteralRenamesSeveralTypeUnions(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},` +
		`{"name":"u","type":["null","string",{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}],"default":null},` +
		`{"name":"b","type":["null","string"]}]}`
	lit, err := hiveLiteral(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := goavro.NewCodec(lit); err != nil {
		t.Fatalf("literal %s: %v", lit, err)
	}
	cols, err := columns(lit)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cols {
		got = append(got, c.Name+" "+c.Type)
	}
	if w := "a bigint,u_members struct<member0:string,member1:struct<x:int>>,b string"; strings.Join(got, ",") != w {
		t.Fatalf("columns of %s:\n%s\nwant %s", lit, strings.Join(got, ","), w)
	}
	if !strings.Contains(lit, `"default":null`) {
		t.Errorf("literal without defaults: %s", lit)
	}
	plain := `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"]}]}`
	if lit, _ := hiveLiteral(plain); lit != plain {
		t.Errorf("a schema without such unions became %s", lit)
	}
}

func TestColumnsRefuseWhatHiveCannotHold(t *testing.T) {
	for name, schema := range map[string]string{
		"recursive":    `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`,
		"not a record": `"string"`,
		"unknown name": `{"type":"record","name":"R","fields":[{"name":"x","type":"other.Type"}]}`,
		"case clash":   `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"A","type":"int"}]}`,
		"null only":    `{"type":"record","name":"R","fields":[{"name":"a","type":"null"}]}`,
	} {
		if _, err := columns(schema); !errors.Is(err, ErrUnsupportedSchema) {
			t.Errorf("%s: err = %v, want ErrUnsupportedSchema", name, err)
		}
	}
}

func TestEvolveAddsColumnsAndRefusesTypeChanges(t *testing.T) {
	v1, _ := columns(`{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string"}]}`)
	v2, _ := columns(`{"type":"record","name":"R","fields":[{"name":"c","type":["null","int"]},{"name":"a","type":"long"}]}`)
	got, err := evolve("t", v1, v2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name+":"+c.Type)
	}
	// Old columns keep their places (readers match Avro and Parquet
	// partitions to the table by position), new ones are appended; b,
	// which v2 dropped, stays.
	if strings.Join(names, ",") != "a:bigint,b:string,c:int" {
		t.Fatalf("evolved columns %v", names)
	}
	v3, _ := columns(`{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`)
	_, err = evolve("clicks", got, v3)
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("type change: err = %v", err)
	}
	for _, part := range []string{"clicks", "field a", "bigint", "string"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
}

func TestCommonDir(t *testing.T) {
	for _, c := range [][3]string{
		{"file:///a/t/2026/11/30/10", "file:///a/t/2026/12/01/00", "file:///a/t/2026"},
		{"hdfs://nn:8020/base/t/2026/11/30/10", "hdfs://nn:8020/base/t/2026/11/30/11", "hdfs://nn:8020/base/t/2026/11/30"},
		{"hdfs://nn:8020/x/1", "hdfs://nn:8020/y/1", "hdfs://nn:8020/"},
	} {
		if got := commonDir(c[0], c[1]); got != c[2] {
			t.Errorf("commonDir(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}

func TestSameLocation(t *testing.T) {
	if !sameLocation("file:///a/b/", "file:/a/b") || !sameLocation("hdfs://nn:1/a", "hdfs://nn:1/a/") {
		t.Fatal("equal locations differ")
	}
	if sameLocation("hdfs://nn:1/a", "hdfs://nn:2/a") || sameLocation("hdfs://nn:1/a", "file:///a") || sameLocation("file:///a/v1", "file:///a") {
		t.Fatal("different locations equal")
	}
}

// TestIndexAccessOnlyWhenSafe: Parquet partitions are read by position
// only in a table whose literal renamed a union's field, and only while
// every Parquet partition's columns are the table's first, in order (a
// v1 file before the stored Kafka columns a v2 table put after its added
// field would read one column as another).
func TestIndexAccessOnlyWhenSafe(t *testing.T) {
	cols := func(names ...string) []*hms.FieldSchema {
		var out []*hms.FieldSchema
		for _, n := range names {
			out = append(out, &hms.FieldSchema{Name: n, Type: "bigint"})
		}
		return out
	}
	table := cols("a", "u_members", "c", "kafka_key")
	for _, c := range []struct {
		renamed bool
		files   [][]string
		want    bool
	}{
		{true, [][]string{{"a", "u_members"}, {"a", "u_members", "c", "kafka_key"}}, true},
		{true, nil, true},
		{false, [][]string{{"a", "u_members"}}, false},
		{true, [][]string{{"a", "u_members", "kafka_key"}}, false},
		{true, [][]string{{"a", "u_members", "c", "kafka_key", "d"}}, false},
	} {
		var plans []plan
		for _, f := range c.files {
			plans = append(plans, plan{hiveNames: f})
		}
		plans = append(plans, plan{}) // an Avro partition
		if got := indexAccess(c.renamed, table, plans); got != c.want {
			t.Errorf("renamed %v, files %v: %v, want %v", c.renamed, c.files, got, c.want)
		}
	}
}
