package hours

import (
	"encoding/json"
	"fmt"

	"github.com/linkedin/goavro/v2"
)

// Stored says which Kafka record parts beyond the value the topic's data
// files hold, as columns appended to the value's record (the loader's
// store.kafka.keys, store.kafka.headers and store.kafka.coordinates). It
// is part of the topic's layout marker, so that every reader and the table
// registration know the columns the files have.
//
// The columns, appended in this order after the value's own fields:
//
//	kafka_key        ["null", "bytes"]   the record key as produced (null for none)
//	kafka_headers    array of tributary.kafka.Header {key: string, value: ["null", "bytes"]}, in record order
//	kafka_topic      string              }
//	kafka_partition  int                 } the coordinates
//	kafka_offset     long                }
//
// Appending fields keeps a record's Avro binary encoding a prefix: a file's
// datum is the producer's value datum unchanged followed by the columns.
type Stored struct {
	Keys        bool
	Headers     bool
	Coordinates bool
}

// Column names of Stored. Frozen.
const (
	ColumnKey       = "kafka_key"
	ColumnHeaders   = "kafka_headers"
	ColumnTopic     = "kafka_topic"
	ColumnPartition = "kafka_partition"
	ColumnOffset    = "kafka_offset"
)

// HeaderRecord is the Avro name of one element of ColumnHeaders.
const HeaderRecord = "tributary.kafka.Header"

// Any reports whether any column is stored.
func (s Stored) Any() bool { return s != Stored{} }

// fields are the Avro field definitions of the stored columns.
func (s Stored) fields() []map[string]any {
	nullBytes := []any{"null", "bytes"}
	var out []map[string]any
	if s.Keys {
		out = append(out, map[string]any{"name": ColumnKey, "type": nullBytes, "default": nil})
	}
	if s.Headers {
		out = append(out, map[string]any{"name": ColumnHeaders, "default": []any{}, "type": map[string]any{
			"type": "array", "items": map[string]any{"type": "record", "name": HeaderRecord, "fields": []any{
				map[string]any{"name": "key", "type": "string"},
				map[string]any{"name": "value", "type": nullBytes, "default": nil},
			}}}})
	}
	if s.Coordinates {
		out = append(out,
			map[string]any{"name": ColumnTopic, "type": "string"},
			map[string]any{"name": ColumnPartition, "type": "int"},
			map[string]any{"name": ColumnOffset, "type": "long"})
	}
	return out
}

// FileSchema is the schema of the files holding values of writer schema
// writer (JSON text): writer with the stored columns appended. writer must
// be a record without a field of a stored column's name; the error says
// which (ErrStoredColumn). Without stored columns it is writer unchanged.
func (s Stored) FileSchema(writer string) (string, error) {
	if !s.Any() {
		return writer, nil
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(writer), &rec); err != nil || rec["type"] != "record" {
		return "", fmt.Errorf("%w: the value schema is not a record, so it cannot take the columns %s", ErrStoredColumn, s.names())
	}
	fields, _ := rec["fields"].([]any)
	for _, f := range fields {
		m, _ := f.(map[string]any)
		for _, c := range s.fields() {
			if m["name"] == c["name"] {
				return "", fmt.Errorf("%w: the value schema has a field %q, the name of a stored Kafka column (%s)", ErrStoredColumn, c["name"], s.keyOf(c["name"].(string)))
			}
		}
	}
	for _, c := range s.fields() {
		fields = append(fields, c)
	}
	rec["fields"] = fields
	b, err := json.Marshal(rec)
	return string(b), err
}

func (s Stored) names() []string {
	var out []string
	for _, c := range s.fields() {
		out = append(out, c["name"].(string))
	}
	return out
}

// keyOf is the loader key that stores a column.
func (s Stored) keyOf(column string) string {
	switch column {
	case ColumnKey:
		return "store.kafka.keys"
	case ColumnHeaders:
		return "store.kafka.headers"
	}
	return "store.kafka.coordinates"
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte // nil for a null value
}

// Record is what the stored columns of one record hold.
type Record struct {
	Key       []byte // nil for a null key
	Headers   []Header
	Topic     string
	Partition int32
	Offset    int64
}

// Encoder appends the stored columns' Avro binary encoding to a value datum.
type Encoder struct {
	s     Stored
	codec *goavro.Codec
}

// NewEncoder returns the encoder of the stored columns.
func (s Stored) NewEncoder() (*Encoder, error) {
	b, err := json.Marshal(map[string]any{"type": "record", "name": "tributary.kafka.Columns", "fields": s.fields()})
	if err != nil {
		return nil, err
	}
	codec, err := goavro.NewCodec(string(b))
	if err != nil {
		return nil, err
	}
	return &Encoder{s: s, codec: codec}, nil
}

// Append appends r's stored columns to buf (a value datum).
func (e *Encoder) Append(buf []byte, r Record) ([]byte, error) {
	nullable := func(b []byte) any {
		if b == nil {
			return nil
		}
		return goavro.Union("bytes", b)
	}
	m := map[string]any{}
	if e.s.Keys {
		m[ColumnKey] = nullable(r.Key)
	}
	if e.s.Headers {
		hs := make([]any, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = map[string]any{"key": h.Key, "value": nullable(h.Value)}
		}
		m[ColumnHeaders] = hs
	}
	if e.s.Coordinates {
		m[ColumnTopic], m[ColumnPartition], m[ColumnOffset] = r.Topic, r.Partition, r.Offset
	}
	return e.codec.BinaryFromNative(buf, m)
}
