package serde

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/schema"
)

const (
	pageViewV1 = `{"type":"record","name":"PageView","namespace":"ex","fields":[
		{"name":"user","type":"long"},
		{"name":"url","type":"string"},
		{"name":"ms","type":"int"},
		{"name":"ref","type":["null","string"],"default":null},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["VIEW","CLICK"]}}]}`
	// pageViewV2 is a backward-compatible reader of v1.
	pageViewV2 = `{"type":"record","name":"PageView","namespace":"ex","fields":[
		{"name":"user","type":"long"},
		{"name":"url","type":"string"},
		{"name":"ms","type":"double"},
		{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["VIEW","CLICK","OTHER"],"default":"OTHER"}},
		{"name":"country","type":"string","default":"??"}]}`
)

func pageView(i int) map[string]any {
	return map[string]any{
		"user": int64(i), "url": "/p/" + string(rune('a'+i%26)), "ms": int32(i * 3),
		"ref": map[string]any{"string": "https://example.invalid/"}, "kind": "CLICK",
	}
}

// countingRegistry counts calls, to prove caching.
type countingRegistry struct {
	Registry
	registers, fetches atomic.Int64
}

func (c *countingRegistry) Register(ctx context.Context, subject, s string) (int, error) {
	c.registers.Add(1)
	return c.Registry.Register(ctx, subject, s)
}

func (c *countingRegistry) SchemaByID(ctx context.Context, id int) (string, error) {
	c.fetches.Add(1)
	return c.Registry.SchemaByID(ctx, id)
}

// newRegistryClient starts a registry over a MemStore and returns a
// client of it.
func newRegistryClient(t testing.TB) *RegistryClient {
	t.Helper()
	c, err := NewRegistryClient(ClientConfig{URL: registrytest.Serve(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	client := newRegistryClient(t)
	ser := NewSerializer(client, SerializerConfig{})
	framed, err := ser.EncodeTopic(ctx, "views", pageViewV1, pageView(7))
	if err != nil {
		t.Fatal(err)
	}
	if framed[0] != 0 || !bytes.Equal(framed[1:5], []byte{0, 0, 0, 1}) {
		t.Fatalf("frame header % x, want 00 00000001", framed[:5])
	}
	// A separate client, as a consumer elsewhere would have.
	other, _ := NewRegistryClient(ClientConfig{URL: client.base})
	counting := &countingRegistry{Registry: other}
	des := NewDeserializer(counting)
	for range 3 {
		v, id, err := des.Decode(ctx, framed)
		if err != nil {
			t.Fatal(err)
		}
		if id != 1 || !reflect.DeepEqual(v, pageView(7)) {
			t.Fatalf("Decode = %v (id %d), want %v", v, id, pageView(7))
		}
	}
	if n := counting.fetches.Load(); n != 1 {
		t.Fatalf("schema fetched %d times, want once", n)
	}
	// The subject follows TopicNameStrategy.
	if sv, err := other.SchemaByID(ctx, 1); err != nil || sv != pageViewV1 {
		t.Fatalf("SchemaByID(1) = %q, %v", sv, err)
	}
	keySer := NewSerializer(client, SerializerConfig{Key: true})
	if _, err := keySer.EncodeTopic(ctx, "views", `"string"`, "k"); err != nil {
		t.Fatal(err)
	}
}

func TestSerializerRegistersOnce(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	counting := &countingRegistry{Registry: newRegistryClient(t)}
	ser := NewSerializer(counting, SerializerConfig{})
	for i := range 5 {
		if _, err := ser.Encode(ctx, "views-value", pageViewV1, pageView(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.registers.Load(); n != 1 {
		t.Fatalf("registered %d times, want once", n)
	}
}

func TestDecodeAsReaderSchema(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	client := newRegistryClient(t)
	ser := NewSerializer(client, SerializerConfig{})
	framed, err := ser.Encode(ctx, "views-value", pageViewV1, pageView(2))
	if err != nil {
		t.Fatal(err)
	}
	reader, err := ParseSchema(pageViewV2)
	if err != nil {
		t.Fatal(err)
	}
	des := NewDeserializer(client)
	v, id, err := des.DecodeAs(ctx, framed, reader)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"user": int64(2), "url": "/p/c", "ms": float64(6), "kind": "CLICK", "country": "??"}
	if id != 1 || !reflect.DeepEqual(v, want) {
		t.Fatalf("DecodeAs = %#v, want %#v", v, want)
	}
	incompatible, _ := ParseSchema(`{"type":"record","name":"PageView","namespace":"ex","fields":[{"name":"must","type":"int"}]}`)
	if _, _, err := des.DecodeAs(ctx, framed, incompatible); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("incompatible reader: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	client := newRegistryClient(t)
	ser := NewSerializer(client, SerializerConfig{})
	good, err := ser.Encode(ctx, "views-value", pageViewV1, pageView(1))
	if err != nil {
		t.Fatal(err)
	}
	des := NewDeserializer(client)
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformedPayload},
		{"short header", []byte{0, 0, 1}, ErrMalformedPayload},
		{"wrong magic", append([]byte{1}, good[1:]...), ErrBadMagic},
		{"unknown id", append([]byte{0, 0, 0, 0, 99}, good[5:]...), ErrUnknownSchema},
		{"id zero", append([]byte{0, 0, 0, 0, 0}, good[5:]...), ErrUnknownSchema},
		{"truncated avro", good[:len(good)-3], ErrMalformedPayload},
		{"trailing bytes", append(bytes.Clone(good), 0), ErrMalformedPayload},
		{"garbage avro", append(bytes.Clone(good[:5]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrMalformedPayload},
		{"bad enum index", append(bytes.Clone(good[:len(good)-1]), 0x08), ErrMalformedPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := des.Decode(ctx, tc.in)
			if !errors.Is(err, tc.want) || v != nil {
				t.Fatalf("Decode = %v, %v; want %v", v, err, tc.want)
			}
		})
	}
	if _, err := ser.Encode(ctx, "views-value", pageViewV1, map[string]any{"user": "not a long"}); !errors.Is(err, ErrEncode) {
		t.Fatalf("bad value: %v", err)
	}
	if _, err := ser.Encode(ctx, "views-value", `{"type":"nope"}`, 1); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("bad schema: %v", err)
	}
	bad := `{"type":"record","name":"PageView","namespace":"ex","fields":[{"name":"must","type":"int"}]}`
	if _, err := ser.Encode(ctx, "views-value", bad, map[string]any{"must": int32(1)}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("incompatible schema: %v", err)
	}
	down, _ := NewRegistryClient(ClientConfig{URL: "http://127.0.0.1:1", Timeout: time.Second})
	if _, _, err := NewDeserializer(down).Decode(ctx, good); !errors.Is(err, ErrRegistry) {
		t.Fatalf("registry down: %v", err)
	}
}

// fixedRegistry serves schemas from a map, for the fuzz target and the
// benchmark: no network in the loop.
type fixedRegistry map[int]string

func (f fixedRegistry) Register(context.Context, string, string) (int, error) { return 1, nil }
func (f fixedRegistry) SchemaByID(_ context.Context, id int) (string, error) {
	if s, ok := f[id]; ok {
		return s, nil
	}
	return "", &APIError{Status: 404, Code: 40403, Message: "schema not found"}
}

var fuzzSchemas = fixedRegistry{
	1: pageViewV1,
	2: `{"type":"array","items":"null"}`,
	3: `{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]}]}`,
	4: `{"type":"map","values":{"type":"fixed","name":"F","size":3}}`,
}

func FuzzDecode(f *testing.F) {
	ctx := context.Background()
	ser := NewSerializer(fuzzSchemas, SerializerConfig{})
	seed, _ := ser.Encode(ctx, "s", pageViewV1, pageView(3))
	f.Add(seed)
	f.Add([]byte{0, 0, 0, 0, 2, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Add([]byte{0, 0, 0, 0, 3, 2, 2, 4, 2, 6, 0})
	f.Add([]byte{0, 0, 0, 0, 4, 2, 2, 'k', 1, 2, 3, 0})
	f.Add([]byte{1, 2, 3})
	des := NewDeserializer(fuzzSchemas)
	reader, err := ParseSchema(pageViewV2)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, id, err := des.Decode(ctx, b)
		if err != nil {
			if !errors.Is(err, ErrMalformedPayload) && !errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrUnknownSchema) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes.
		w, _ := des.writer(ctx, schema.ID(id))
		again, err := w.Codec().BinaryFromNative(nil, v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		if !bytes.Equal(again, b[5:]) {
			// Avro allows several encodings of one value (block sizes,
			// long varints); then the value must at least decode the same.
			v2, _, err := w.Codec().NativeFromBinary(again)
			if err != nil || !reflect.DeepEqual(v, v2) {
				t.Fatalf("re-encoding changed the value")
			}
		}
		if id == 1 {
			if _, _, err := des.DecodeAs(ctx, b, reader); err != nil {
				t.Fatalf("DecodeAs of a valid v1 record: %v", err)
			}
		}
	})
}

// BenchmarkDecode measures Decode with the writer schema cached: the frame,
// validation and goavro decoding of one PageView record per op.
func BenchmarkDecode(b *testing.B) {
	ctx := context.Background()
	ser := NewSerializer(fuzzSchemas, SerializerConfig{})
	framed, err := ser.Encode(ctx, "s", pageViewV1, pageView(12345))
	if err != nil {
		b.Fatal(err)
	}
	des := NewDeserializer(fuzzSchemas)
	if _, _, err := des.Decode(ctx, framed); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(framed)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := des.Decode(ctx, framed); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeAs adds resolution into a reader schema.
func BenchmarkDecodeAs(b *testing.B) {
	ctx := context.Background()
	ser := NewSerializer(fuzzSchemas, SerializerConfig{})
	framed, _ := ser.Encode(ctx, "s", pageViewV1, pageView(12345))
	des := NewDeserializer(fuzzSchemas)
	reader, _ := ParseSchema(pageViewV2)
	b.SetBytes(int64(len(framed)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := des.DecodeAs(ctx, framed, reader); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
