package icereader

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestDecodeResult decodes what the scripts print (see scripts/encode.py)
// into the Go values of every type.
func TestDecodeResult(t *testing.T) {
	out := `{"schema":[
	{"n":"b","t":{"k":"bool"}},{"n":"i8","t":{"k":"int8"}},{"n":"i16","t":{"k":"int16"}},
	{"n":"i","t":{"k":"int32"}},{"n":"l","t":{"k":"int64"}},{"n":"f","t":{"k":"float32"}},
	{"n":"d","t":{"k":"float64"}},{"n":"dec","t":{"k":"decimal","p":10,"s":2}},{"n":"s","t":{"k":"string"}},
	{"n":"u","t":{"k":"uuid"}},{"n":"bin","t":{"k":"binary"}},{"n":"dt","t":{"k":"date"}},
	{"n":"tm","t":{"k":"time"}},{"n":"ts","t":{"k":"timestamp"}},{"n":"tz","t":{"k":"timestamptz"}},
	{"n":"st","t":{"k":"struct","f":[{"n":"x","t":{"k":"float64"}},{"n":"y","t":{"k":"list","e":{"k":"int64"}}}]}},
	{"n":"m","t":{"k":"map","key":{"k":"int32"},"value":{"k":"string"}}},
	{"n":"o","t":{"k":"other","name":"interval"}}],
	"rows":[
	[true,-128,-32768,-2147483648,9223372036854775807,"NaN","-Infinity","-0.01","é","12345678-1234-5678-1234-567812345678",
	 "AP8=",-1,86399999999,-1,1767323045123456,{"x":"Infinity","y":[1,null]},[[2,"v"],[1,null]],"1 day"],
	[null,null,null,null,null,1.5,0.1,null,null,null,"",null,null,null,null,{"x":null,"y":null},[],null]]}`
	res, err := decodeResult([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	wantCols := "b:bool i8:int8 i16:int16 i:int32 l:int64 f:float32 d:float64 dec:decimal(10,2) s:string u:uuid " +
		"bin:binary dt:date tm:time ts:timestamp tz:timestamptz st:struct<x:float64,y:list<int64>> m:map<int32,string> o:interval"
	var cols []string
	for _, c := range res.Columns {
		cols = append(cols, c.Name+":"+c.Type)
	}
	if got := strings.Join(cols, " "); got != wantCols {
		t.Errorf("columns %s, want %s", got, wantCols)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	want := []map[string]any{{
		"b": true, "i8": int8(-128), "i16": int16(-32768), "i": int32(math.MinInt32), "l": int64(math.MaxInt64),
		"f": float32(math.NaN()), "d": math.Inf(-1), "dec": Decimal("-0.01"), "s": "é",
		"u": UUID("12345678-1234-5678-1234-567812345678"), "bin": []byte{0, 0xff}, "dt": DateOf(time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)),
		"tm": TimeOfDay(86399999999), "ts": LocalOf(time.UnixMicro(-1).UTC()),
		"tz": InstantOf(ts), "st": map[string]any{"x": math.Inf(1), "y": []any{int64(1), nil}},
		"m": []MapEntry{{int32(2), "v"}, {int32(1), nil}}, "o": "1 day",
	}, {
		"b": nil, "i8": nil, "i16": nil, "i": nil, "l": nil, "f": float32(1.5), "d": 0.1, "dec": nil, "s": nil, "u": nil,
		"bin": []byte{}, "dt": nil, "tm": nil, "ts": nil, "tz": nil, "st": map[string]any{"x": nil, "y": nil},
		"m": []MapEntry{}, "o": nil,
	}}
	if d := DiffRows(want, res.Rows); d != "" {
		t.Error(d)
	}
	if got := res.Rows[0]["ts"].(Timestamp).String(); got != "1969-12-31T23:59:59.999999" {
		t.Errorf("timestamp -1 µs prints %s", got)
	}
	if got := res.Rows[0]["dt"].(Date).String(); got != "1969-12-31" {
		t.Errorf("date -1 prints %s", got)
	}

	for _, bad := range []string{
		`{"schema":[{"n":"i","t":{"k":"int32"}}],"rows":[["1"]]}`,
		`{"schema":[{"n":"d","t":{"k":"float64"}}],"rows":[["nan"]]}`,
		`{"schema":[{"n":"i","t":{"k":"int32"}}],"rows":[[1,2]]}`,
		`{"schema":[{"n":"b","t":{"k":"binary"}}],"rows":[["%%"]]}`,
	} {
		if _, err := decodeResult([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// TestEqual: NaN equals NaN, Go types must match, nested values compare
// member by member.
func TestEqual(t *testing.T) {
	for _, c := range []struct {
		a, b any
		want bool
	}{
		{math.NaN(), math.NaN(), true},
		{float32(math.NaN()), float32(math.NaN()), true},
		{float32(math.NaN()), math.NaN(), false},
		{int32(1), int64(1), false},
		{nil, nil, true},
		{nil, []byte{}, false},
		{[]byte{1}, []byte{1}, true},
		{map[string]any{"a": []any{math.NaN()}}, map[string]any{"a": []any{math.NaN()}}, true},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{[]MapEntry{{"k", 1}}, []MapEntry{{"k", 1}}, true},
		{[]MapEntry{{"k", 1}}, []MapEntry{{"k", 2}}, false},
		{InstantOf(time.Unix(1, 0)), LocalOf(time.Unix(1, 0)), false},
		{InstantOf(time.Unix(1, 0)), InstantOf(time.Unix(1, 0)), true},
	} {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%#v, %#v) = %v", c.a, c.b, got)
		}
	}
	rows := []map[string]any{{"id": int64(2)}, {"id": nil}, {"id": int64(1)}}
	SortRows(rows, "id")
	if d := DiffRows([]map[string]any{{"id": nil}, {"id": int64(1)}, {"id": int64(2)}}, rows); d != "" {
		t.Errorf("sorted: %s", d)
	}
	if d := DiffRows([]map[string]any{{"id": int32(1)}}, []map[string]any{{"id": int64(1), "x": 1}}); !strings.Contains(d, "int64(1), want int32(1)") || !strings.Contains(d, "column x not wanted") {
		t.Errorf("DiffRows: %q", d)
	}
}
