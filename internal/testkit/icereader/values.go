package icereader

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The Go values of the readers' columns, by the type the reader gives the
// column: bool; int8, int16, int32 (Iceberg int), int64 (long); float32
// (float), float64 (double), NaN and infinities kept; Decimal; string;
// UUID; []byte (binary, fixed); Date; TimeOfDay (time); Timestamp
// (timestamp and timestamptz); map[string]any (struct, by field name);
// []any (list); []MapEntry (map, in the order read); nil (null). A type
// neither reader names comes as the string Python prints for it.

// Date is a date as days since 1970-01-01 (Iceberg's date).
type Date int32

// DateOf returns the date of t's wall clock.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Time returns midnight UTC of d.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func (d Date) String() string { return d.Time().Format(time.DateOnly) }

// TimeOfDay is a time of day in microseconds since midnight (Iceberg's time).
type TimeOfDay int64

// Timestamp is a timestamp in microseconds since 1970-01-01 00:00: with
// UTC, an instant (Iceberg's timestamptz, Spark's timestamp); without, a
// date and time of no zone (Iceberg's timestamp, Spark's timestamp_ntz),
// counted as if it were UTC.
type Timestamp struct {
	Micros int64
	UTC    bool
}

// InstantOf returns t as a timestamptz.
func InstantOf(t time.Time) Timestamp { return Timestamp{Micros: t.UnixMicro(), UTC: true} }

// LocalOf returns t's wall clock as a timestamp without zone.
func LocalOf(t time.Time) Timestamp {
	wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	return Timestamp{Micros: wall.UnixMicro()}
}

// Time returns the timestamp in UTC (for one without zone, its wall clock
// read as UTC).
func (ts Timestamp) Time() time.Time { return time.UnixMicro(ts.Micros).UTC() }

func (ts Timestamp) String() string {
	s := ts.Time().Format("2006-01-02T15:04:05.000000")
	if ts.UTC {
		s += "Z"
	}
	return s
}

// Decimal is a decimal in plain notation with all its scale's digits
// ("-12.30" for -12.3 at scale 2).
type Decimal string

// UUID is a UUID in its canonical string form.
type UUID string

// MapEntry is one key and value of a map.
type MapEntry struct {
	Key, Value any
}

// Column is one column of a Result: its name and its type as the reader
// gives it ("int32", "decimal(10,2)", "timestamptz", "struct<a:int32>",
// "list<string>", "map<string,int64>", ...).
type Column struct {
	Name string
	Type string
}

// Result is what a reader read: the columns in its order and the rows,
// each a map from column name to value.
type Result struct {
	Columns []Column
	Rows    []map[string]any
}

// typeDesc is a column type as the scripts describe it (see
// scripts/encode.py).
type typeDesc struct {
	K      string    `json:"k"`
	P      int       `json:"p"`
	S      int       `json:"s"`
	F      []colDesc `json:"f"`
	E      *typeDesc `json:"e"`
	Key    *typeDesc `json:"key"`
	Value  *typeDesc `json:"value"`
	Native string    `json:"name"`
}

type colDesc struct {
	N string    `json:"n"`
	T *typeDesc `json:"t"`
}

func (d *typeDesc) String() string {
	switch d.K {
	case "decimal":
		return fmt.Sprintf("decimal(%d,%d)", d.P, d.S)
	case "struct":
		fields := make([]string, len(d.F))
		for i, f := range d.F {
			fields[i] = f.N + ":" + f.T.String()
		}
		return "struct<" + strings.Join(fields, ",") + ">"
	case "list":
		return "list<" + d.E.String() + ">"
	case "map":
		return "map<" + d.Key.String() + "," + d.Value.String() + ">"
	case "other":
		return d.Native
	}
	return d.K
}

// encodedResult is a script's result: the columns and rows of arrays.
type encodedResult struct {
	Schema []colDesc         `json:"schema"`
	Rows   []json.RawMessage `json:"rows"`
}

// decodeResult turns a script's encoded result into Go values.
func decodeResult(raw []byte) (Result, error) {
	var enc encodedResult
	if err := json.Unmarshal(raw, &enc); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrBadOutput, err)
	}
	res := Result{Columns: make([]Column, len(enc.Schema)), Rows: make([]map[string]any, 0, len(enc.Rows))}
	for i, c := range enc.Schema {
		res.Columns[i] = Column{Name: c.N, Type: c.T.String()}
	}
	for _, rawRow := range enc.Rows {
		var cells []any
		if err := unmarshalNumbers(rawRow, &cells); err != nil {
			return Result{}, err
		}
		if len(cells) != len(enc.Schema) {
			return Result{}, fmt.Errorf("%w: a row of %d values for %d columns", ErrBadOutput, len(cells), len(enc.Schema))
		}
		row := make(map[string]any, len(cells))
		for i, c := range enc.Schema {
			v, err := decodeValue(c.T, cells[i])
			if err != nil {
				return Result{}, fmt.Errorf("column %s: %w", c.N, err)
			}
			row[c.N] = v
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// unmarshalNumbers decodes JSON keeping numbers as json.Number, so that
// longs beyond 2^53 stay exact.
func unmarshalNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadOutput, err)
	}
	return nil
}

func decodeValue(d *typeDesc, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("%w: %T %v for a %s", ErrBadOutput, v, v, d)
	}
	switch d.K {
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return b, nil
	case "int8", "int16", "int32", "int64", "date", "time", "timestamp", "timestamptz":
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return bad()
		}
		switch d.K {
		case "int8":
			return int8(i), nil
		case "int16":
			return int16(i), nil
		case "int32":
			return int32(i), nil
		case "date":
			return Date(i), nil
		case "time":
			return TimeOfDay(i), nil
		case "timestamp":
			return Timestamp{Micros: i}, nil
		case "timestamptz":
			return Timestamp{Micros: i, UTC: true}, nil
		}
		return i, nil
	case "float32", "float64":
		var f float64
		switch x := v.(type) {
		case json.Number:
			var err error
			if f, err = strconv.ParseFloat(string(x), 64); err != nil {
				return bad()
			}
		case string:
			switch x {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return bad()
			}
		default:
			return bad()
		}
		if d.K == "float32" {
			return float32(f), nil
		}
		return f, nil
	case "decimal", "uuid", "string", "binary", "other":
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		switch d.K {
		case "decimal":
			return Decimal(s), nil
		case "uuid":
			return UUID(s), nil
		case "binary":
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return bad()
			}
			return b, nil
		}
		return s, nil
	case "struct":
		obj, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(d.F))
		for _, f := range d.F {
			x, err := decodeValue(f.T, obj[f.N])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.N, err)
			}
			out[f.N] = x
		}
		return out, nil
	case "list":
		arr, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			x, err := decodeValue(d.E, e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = x
		}
		return out, nil
	case "map":
		arr, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]MapEntry, len(arr))
		for i, e := range arr {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return bad()
			}
			k, err := decodeValue(d.Key, pair[0])
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", i, err)
			}
			x, err := decodeValue(d.Value, pair[1])
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			out[i] = MapEntry{Key: k, Value: x}
		}
		return out, nil
	}
	return bad()
}
