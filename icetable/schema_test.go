package icetable

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestSchemaMapping(t *testing.T) {
	s := mustSchema(t, typesSchema)
	sc, err := icebergSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]iceberg.Type{
		"ts": iceberg.PrimitiveTypes.TimestampTz, "tsu": iceberg.PrimitiveTypes.TimestampTz,
		"lts": iceberg.PrimitiveTypes.Timestamp, "tm": iceberg.PrimitiveTypes.Time, "dt": iceberg.PrimitiveTypes.Date,
		"dec": iceberg.DecimalTypeOf(10, 2), "fdec": iceberg.DecimalTypeOf(18, 3), "fx": iceberg.FixedTypeOf(4),
		"e": iceberg.PrimitiveTypes.String, "u": iceberg.PrimitiveTypes.String, "opt": iceberg.PrimitiveTypes.String,
		"multi.member0": iceberg.PrimitiveTypes.Int32, "multi.member1": iceberg.PrimitiveTypes.String,
		"_kafka.timestamp": iceberg.PrimitiveTypes.TimestampTz, "_kafka.offset": iceberg.PrimitiveTypes.Int64,
	} {
		f, ok := sc.FindFieldByName(name)
		if !ok || !f.Type.Equals(want) {
			t.Errorf("%s: %v (found %v), want %v", name, f.Type, ok, want)
		}
	}
	if f, _ := sc.FindFieldByName("s"); f.Required {
		t.Errorf("s is required; Avro columns are optional")
	}
	if f, _ := sc.FindFieldByName("_kafka"); !f.Required {
		t.Errorf("_kafka is optional, want required")
	}
	// Ids are unique.
	seen := map[int]string{}
	for _, name := range []string{"b", "rec", "rec.a", "arr", "arr.element", "mp", "mp.key", "mp.value", "_kafka", "_kafka.partition"} {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			t.Fatalf("%s missing", name)
		}
		if other, dup := seen[f.ID]; dup {
			t.Errorf("%s and %s share id %d", name, other, f.ID)
		}
		seen[f.ID] = name
	}
}

func TestSchemaRefused(t *testing.T) {
	for _, text := range []string{
		`{"type":"record","name":"R","fields":[{"name":"_kafka","type":"long"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}`,
		`"string"`,
	} {
		if _, err := icebergSchema(mustSchema(t, text)); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", text, err)
		}
	}
}

func TestTypePromotionsAllowed(t *testing.T) {
	v1 := mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"f","type":"float"},{"name":"m","type":["null","int","string"]}]}`)
	v2 := mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"f","type":"double"},{"name":"m","type":["null","long","string"]}]}`)
	v3 := mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"f","type":"double"},{"name":"m","type":["null","string","long"]}]}`)
	s1, _ := icebergSchema(v1)
	s2, _ := icebergSchema(v2)
	s3, _ := icebergSchema(v3)
	if err := checkTypes("t", s1, s2); err != nil {
		t.Errorf("int->long, float->double: %v", err)
	}
	if err := checkTypes("t", s2, s3); !errors.Is(err, ErrTypeChange) {
		t.Errorf("reordered union members: %v, want ErrTypeChange", err)
	}
}
