package avro

import (
	"errors"
	"reflect"
	"testing"
)

// roundTrip encodes v with writer, decodes it and resolves it into reader;
// the result must also encode with the reader's codec.
func roundTrip(t *testing.T, reader, writer string, v any) any {
	t.Helper()
	r, w := mustParse(t, reader), mustParse(t, writer)
	bin, err := w.Codec().BinaryFromNative(nil, v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	native, _, err := w.Codec().NativeFromBinary(bin)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	rs, err := NewResolver(r, w)
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	out, err := rs.Resolve(native)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if _, err := r.Codec().BinaryFromNative(nil, out); err != nil {
		t.Fatalf("resolved value %#v does not encode with the reader: %v", out, err)
	}
	return out
}

func TestResolve(t *testing.T) {
	writer := `{"type":"record","name":"User","namespace":"ex","fields":[
		{"name":"id","type":"int"},
		{"name":"name","type":"string"},
		{"name":"gone","type":"string"},
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","MAUVE"]}},
		{"name":"tags","type":{"type":"array","items":"int"}},
		{"name":"attrs","type":{"type":"map","values":"float"}},
		{"name":"nick","type":["null","string"]},
		{"name":"score","type":["int","string"]},
		{"name":"blob","type":"string"}
	]}`
	reader := `{"type":"record","name":"User","namespace":"ex","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"string"},
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","OTHER"],"default":"OTHER"}},
		{"name":"tags","type":{"type":"array","items":"double"}},
		{"name":"attrs","type":{"type":"map","values":"double"}},
		{"name":"nick","type":["null","string"]},
		{"name":"score","type":["null","long","string"]},
		{"name":"blob","type":"bytes"},
		{"name":"country","type":"string","default":"NL"},
		{"name":"opt","type":["null","int"],"default":null},
		{"name":"point","type":{"type":"record","name":"P","fields":[{"name":"x","type":"int"},{"name":"y","type":"int","default":7}]},"default":{"x":1}},
		{"name":"raw","type":"bytes","default":"\u00ff\u0001"}
	]}`
	in := map[string]any{
		"id": int32(42), "name": "ada", "gone": "x", "color": "MAUVE",
		"tags": []any{int32(1), int32(2)}, "attrs": map[string]any{"k": float32(1.5)},
		"nick": map[string]any{"string": "a"}, "score": map[string]any{"int": int32(9)}, "blob": "hi",
	}
	got := roundTrip(t, reader, writer, in)
	want := map[string]any{
		"id": int64(42), "name": "ada", "color": "OTHER",
		"tags": []any{float64(1), float64(2)}, "attrs": map[string]any{"k": float64(1.5)},
		"nick": map[string]any{"string": "a"}, "score": map[string]any{"long": int64(9)}, "blob": []byte("hi"),
		"country": "NL", "opt": nil, "point": map[string]any{"x": int32(1), "y": int32(7)},
		"raw": []byte{0xff, 0x01},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve =\n%#v\nwant\n%#v", got, want)
	}
	in["nick"] = nil
	if got := roundTrip(t, reader, writer, in).(map[string]any); got["nick"] != nil {
		t.Fatalf("null union branch resolved to %#v", got["nick"])
	}
}

func TestResolveUnionWriterIntoPlainReader(t *testing.T) {
	got := roundTrip(t, `"double"`, `["int","float"]`, map[string]any{"float": float32(2.5)})
	if got != float64(2.5) {
		t.Fatalf("got %#v", got)
	}
}

func TestResolveRecursive(t *testing.T) {
	writer := `{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}`
	reader := `{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]},{"name":"n","type":"int","default":3}]}`
	in := map[string]any{"v": int32(1), "next": map[string]any{"L": map[string]any{"v": int32(2), "next": nil}}}
	got := roundTrip(t, reader, writer, in)
	want := map[string]any{"v": int64(1), "n": int32(3), "next": map[string]any{"L": map[string]any{"v": int64(2), "n": int32(3), "next": nil}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
}

func TestResolverRejectsIncompatible(t *testing.T) {
	_, err := NewResolver(mustParse(t, `"int"`), mustParse(t, `"string"`))
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("NewResolver = %v, want ErrIncompatible", err)
	}
}

func TestResolveDefaultsAreCopies(t *testing.T) {
	r := mustParse(t, rec(`{"name":"l","type":{"type":"array","items":"int"},"default":[1]}`))
	w := mustParse(t, rec(``))
	rs, err := NewResolver(r, w)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := rs.Resolve(map[string]any{})
	first.(map[string]any)["l"].([]any)[0] = int32(99)
	second, _ := rs.Resolve(map[string]any{})
	if got := second.(map[string]any)["l"].([]any)[0]; got != int32(1) {
		t.Fatalf("a caller's change leaked into the default: %v", got)
	}
}
