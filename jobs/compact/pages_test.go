package compact

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	pqdelta "github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/xitongsys/parquet-go/common"
	"github.com/xitongsys/parquet-go/encoding"
	"github.com/xitongsys/parquet-go/layout"
	"github.com/xitongsys/parquet-go/parquet"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// FuzzHybrid round-trips appendHybrid through parquet-go's reader of the
// RLE/bit-packed hybrid (the one package rows reads pages with): every
// width, runs and literals mixed, lengths not a multiple of eight.
func FuzzHybrid(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3}, uint8(3))
	f.Add([]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 1}, uint8(8))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 200}, uint8(16))
	f.Fuzz(func(t *testing.T, data []byte, w uint8) {
		width := int(w%32) + 1
		var vs []int32
		for i := 0; i+1 < len(data); i += 2 {
			// Pairs (value, repeat) give runs as well as literals.
			v := int32(uint32(data[i]) * 2654435761 >> (32 - width))
			if width == 32 {
				v = int32(uint32(data[i]) * 2654435761)
			}
			for range int(data[i+1]%12) + 1 {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return
		}
		enc := appendHybrid(nil, vs, width)
		framed := binary.LittleEndian.AppendUint32(nil, uint32(len(enc)))
		got, err := encoding.ReadRLEBitPackedHybrid(bytes.NewReader(append(framed, enc...)), uint64(width), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < len(vs) {
			t.Fatalf("decoded %d values, want %d", len(got), len(vs))
		}
		for i, v := range vs {
			if g := got[i].(int64); uint32(g) != uint32(v) {
				t.Fatalf("value %d: %d, want %d (width %d)", i, g, v, width)
			}
		}
	})
}

// TestHybridNarrow: eight distinct values in a run-free column cost 3 bits
// each, and a long run a few bytes.
func TestHybridNarrow(t *testing.T) {
	vs := make([]int32, 800)
	for i := range vs {
		vs[i] = int32(i * 5 % 8)
	}
	if n := len(appendHybrid(nil, vs, bits.Len32(7))); n > 800*3/8+4 {
		t.Errorf("800 values of 3 bits in %d bytes", n)
	}
	if n := len(appendHybrid(nil, make([]int32, 10000), 3)); n > 4 {
		t.Errorf("a run of 10000 zeros in %d bytes", n)
	}
}

// TestDictFloatKeys: a float dictionary keeps -0 apart from 0 and every
// NaN in one entry (as Go map keys -0 equals 0, and NaN equals nothing).
func TestDictFloatKeys(t *testing.T) {
	typ := parquet.Type_DOUBLE
	tab := layout.NewEmptyTable()
	tab.Schema = &parquet.SchemaElement{Type: &typ}
	tab.Info = &common.Tag{Encoding: parquet.Encoding_RLE_DICTIONARY}
	for i := range 300 {
		tab.Values = append(tab.Values, []float64{0, math.Copysign(0, -1), math.NaN()}[i%3])
		tab.DefinitionLevels = append(tab.DefinitionLevels, 0)
		tab.RepetitionLevels = append(tab.RepetitionLevels, 0)
	}
	dict := layout.NewDictRec(typ)
	dictPages(dict, tab, 1<<20, parquet.CompressionCodec_ZSTD)
	if len(dict.DictSlice) != 3 {
		t.Fatalf("dictionary %v, want 0, -0 and NaN", dict.DictSlice)
	}
	if d := dict.DictSlice; math.Signbit(d[0].(float64)) || !math.Signbit(d[1].(float64)) || !math.IsNaN(d[2].(float64)) {
		t.Errorf("dictionary %v, want 0, -0 and NaN in that order", d)
	}
}

// TestAllNullColumnsRead: a file whose nullable columns hold only nulls
// (an hour without errors; a sorted file's first rows) is read back by
// pyarrow: a delta-encoded column's page of no values is PLAIN, since the
// delta encoders write nothing at all for none.
func TestAllNullColumnsRead(t *testing.T) {
	s := sizeSample{topic: "nulls", hours: 1, schema: `{"type": "record", "name": "R", "fields": [
	  {"name": "a", "type": "long"},
	  {"name": "b", "type": ["null", "long"]},
	  {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
	  {"name": "n", "type": ["null", "int"]},
	  {"name": "c", "type": ["null", "string"]}]}`,
		gen: func(int, time.Time) []partRecord {
			var out []partRecord
			for i := range 100 {
				out = append(out, partRecord{0, map[string]any{"a": int64(i), "b": nil, "ts": nil, "n": nil, "c": nil}})
			}
			return out
		}}
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeSample(t, fsys, base, s)
	names, err := hours.DataFiles(fsys, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	orig := copyOut(t, fsys, dirs[0], names, filepath.Join(local, "orig"))
	before := readTopicOf(t, fsys, base, s.topic, hours.Avro)
	c, err := New(Config{FS: fsys, Base: base, ClosedThrough: closedAll})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Package rows (parquet-go's reader) too.
	after := readTopicOf(t, fsys, base, s.topic, hours.Parquet)
	if len(after) != 100 || len(before) != 100 {
		t.Fatalf("package rows read %d Parquet rows, %d Avro, want 100", len(after), len(before))
	}
	for i := range before {
		if a, p := comparable(before[i]), comparable(after[i]); !reflect.DeepEqual(a, p) {
			t.Fatalf("record %d:\n avro    %v\n parquet %v", i, a, p)
		}
	}
	pq := copyOut(t, fsys, dirs[0], compactedFiles(t, fsys, dirs[0]), filepath.Join(local, "pq"))
	t.Logf("pyarrow vs fastavro: %v", comparePython(t, map[string]check{"hour": {Avro: orig, Parquet: pq}}))
}

// TestDeltaExtremes: DELTA_BINARY_PACKED pages of int and long columns
// holding their minimum and maximum side by side decode to the values
// (parquet-go's own encoder wrote too narrow a bit width for them).
func TestDeltaExtremes(t *testing.T) {
	for _, c := range []struct {
		typ  parquet.Type
		vals []any
	}{
		{parquet.Type_INT32, []any{int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(-1), int32(math.MaxInt32), int32(math.MinInt32)}},
		{parquet.Type_INT64, []any{int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64)}},
	} {
		typ := c.typ
		p := &layout.Page{Info: &common.Tag{Encoding: parquet.Encoding_DELTA_BINARY_PACKED}, Schema: &parquet.SchemaElement{Type: &typ}}
		b := encodeValues(p, c.vals)
		var enc pqdelta.BinaryPackedEncoding
		var got []any
		if typ == parquet.Type_INT32 {
			out, err := enc.DecodeInt32(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range out {
				got = append(got, v)
			}
		} else {
			out, err := enc.DecodeInt64(nil, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range out {
				got = append(got, v)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.vals) {
			t.Errorf("%v: decoded %v, want %v", typ, got, c.vals)
		}
	}
}
