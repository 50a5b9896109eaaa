package hours

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
)

func TestStoredColumnsRoundTrip(t *testing.T) {
	writer := `{"type":"record","name":"V","namespace":"x","fields":[{"name":"id","type":"long"},{"name":"s","type":"string"}]}`
	s := Stored{Keys: true, Headers: true, Coordinates: true}
	fileSchema, err := s.FileSchema(writer)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := goavro.NewCodec(writer)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := goavro.NewCodec(fileSchema)
	if err != nil {
		t.Fatalf("file schema %s: %v", fileSchema, err)
	}
	enc, err := s.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{
		{Key: []byte("k1"), Headers: []Header{{"a", []byte("1")}, {"a", nil}}, Topic: "t", Partition: 3, Offset: 42},
		{Topic: "t2", Partition: 0, Offset: 0},
	} {
		datum, err := vc.BinaryFromNative(nil, map[string]any{"id": int64(7), "s": "seven"})
		if err != nil {
			t.Fatal(err)
		}
		full, err := enc.Append(datum, r)
		if err != nil {
			t.Fatal(err)
		}
		native, rest, err := fc.NativeFromBinary(full)
		if err != nil || len(rest) != 0 {
			t.Fatalf("decode: %v (%d bytes left)", err, len(rest))
		}
		m := native.(map[string]any)
		if m["id"] != int64(7) || m["s"] != "seven" || m[ColumnTopic] != r.Topic || m[ColumnPartition] != r.Partition || m[ColumnOffset] != r.Offset {
			t.Fatalf("decoded %v, want value id=7 s=seven and %+v", m, r)
		}
		if k := m[ColumnKey]; (r.Key == nil) != (k == nil) || (k != nil && !bytes.Equal(k.(map[string]any)["bytes"].([]byte), r.Key)) {
			t.Fatalf("key %v, want %q", k, r.Key)
		}
		hs := m[ColumnHeaders].([]any)
		if len(hs) != len(r.Headers) {
			t.Fatalf("headers %v, want %v", hs, r.Headers)
		}
		for i, h := range hs {
			hm := h.(map[string]any)
			v, _ := hm["value"].(map[string]any)
			if hm["key"] != r.Headers[i].Key || (v == nil) != (r.Headers[i].Value == nil) || (v != nil && !bytes.Equal(v["bytes"].([]byte), r.Headers[i].Value)) {
				t.Fatalf("header %d: %v, want %+v", i, hm, r.Headers[i])
			}
		}
	}
}

func TestStoredColumnsRefused(t *testing.T) {
	s := Stored{Keys: true, Coordinates: true}
	for writer, want := range map[string]string{
		`{"type":"record","name":"V","fields":[{"name":"kafka_offset","type":"long"}]}`: `"kafka_offset"`,
		`{"type":"record","name":"V","fields":[{"name":"kafka_key","type":"string"}]}`:  `store.kafka.keys`,
		`"string"`: "not a record",
	} {
		_, err := s.FileSchema(writer)
		if !errors.Is(err, ErrStoredColumn) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want ErrStoredColumn saying %s", writer, err, want)
		}
	}
	if got, err := (Stored{}).FileSchema(`"string"`); err != nil || got != `"string"` {
		t.Errorf("no columns: %q, %v", got, err)
	}
}
