package avro

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	s := mustParse(t, `{"type":"record","name":"R","fields":[
		{"name":"n","type":"long"},{"name":"s","type":"string"},
		{"name":"l","type":{"type":"array","items":"int"}},
		{"name":"m","type":{"type":"map","values":["null","double"]}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"f","type":{"type":"fixed","name":"F","size":2}},
		{"name":"b","type":"boolean"},{"name":"x","type":"float"}]}`)
	good, err := s.Codec().BinaryFromNative(nil, map[string]any{
		"n": int64(-5), "s": "hé", "l": []any{int32(1), int32(300)},
		"m": map[string]any{"k": map[string]any{"double": 1.0}, "z": nil},
		"e": "B", "f": []byte{1, 2}, "b": true, "x": float32(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(good); err != nil {
		t.Fatalf("valid datum rejected: %v", err)
	}
	for i := range good {
		if err := s.Validate(good[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	if err := s.Validate(append(good, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte accepted: %v", err)
	}
	// A huge array block count in a few bytes: goavro would try to allocate it.
	arr := mustParse(t, `{"type":"array","items":"null"}`)
	huge := []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0}
	if err := arr.Validate(huge); !errors.Is(err, ErrMalformed) {
		t.Fatalf("huge block count accepted: %v", err)
	}
	ok := []byte{0x06, 0} // three nulls
	if err := arr.Validate(ok); err != nil {
		t.Fatalf("array of nulls rejected: %v", err)
	}
	list := mustParse(t, `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`)
	deep := make([]byte, 5000)
	for i := range deep[:len(deep)-1] {
		deep[i] = 2 // branch "L", again and again
	}
	if err := list.Validate(deep); !errors.Is(err, ErrMalformed) {
		t.Fatalf("5000-deep nesting accepted: %v", err)
	}
}
