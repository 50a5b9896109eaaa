package icetable

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/tributary/tributary/schema/avro"
)

// The Kafka metadata column (frozen: readers select it by these names).
const (
	kafkaColumn    = "_kafka"
	kafkaPartition = "partition"
	kafkaOffset    = "offset"
	kafkaTimestamp = "timestamp"
)

// goavroLogical are the logical types goavro decodes, and so names union
// branches TYPE.LOGICAL by; others keep their type's name.
var goavroLogical = map[string]bool{"long.timestamp-millis": true, "long.timestamp-micros": true,
	"int.time-millis": true, "long.time-micros": true, "int.date": true, "bytes.decimal": true}

// schemaBuilder maps an Avro schema to an Iceberg one, numbering fields
// from next. Every column from Avro is optional: a later version may drop a
// field or make it nullable, and the rows written then must still fit.
type schemaBuilder struct {
	next     int
	decimals map[*avro.Type][2]int
}

func (b *schemaBuilder) id() int {
	b.next++
	return b.next
}

// icebergSchema is the table schema for an Avro record schema: the
// record's fields, then the _kafka metadata column. Ids are fresh from 1;
// Table.evolve matches them to a table's by name.
func icebergSchema(s *avro.Schema) (*iceberg.Schema, error) {
	root := s.Root
	if root.Kind != avro.Record {
		return nil, fmt.Errorf("%w: the topic's schema is %s, not a record", ErrSchema, root.Kind)
	}
	b := &schemaBuilder{decimals: decimals(s)}
	var fields []iceberg.NestedField
	for _, f := range root.Fields {
		if f.Name == kafkaColumn {
			return nil, fmt.Errorf("%w: field %s is the name of the metadata column", ErrSchema, f.Name)
		}
		id := b.id()
		t, err := b.typeOf(f.Type, f.Name, 0)
		if err != nil {
			return nil, err
		}
		fields = append(fields, iceberg.NestedField{ID: id, Name: f.Name, Type: t})
	}
	kid := b.id()
	pid, oid, tid := b.id(), b.id(), b.id()
	fields = append(fields, iceberg.NestedField{ID: kid, Name: kafkaColumn, Required: true, Type: &iceberg.StructType{
		FieldList: []iceberg.NestedField{
			{ID: pid, Name: kafkaPartition, Type: iceberg.PrimitiveTypes.Int32, Required: true},
			{ID: oid, Name: kafkaOffset, Type: iceberg.PrimitiveTypes.Int64, Required: true},
			{ID: tid, Name: kafkaTimestamp, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		},
	}})
	return iceberg.NewSchema(0, fields...), nil
}

func (b *schemaBuilder) typeOf(t *avro.Type, path string, depth int) (iceberg.Type, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%w: field %s nested too deeply (recursive type?)", ErrSchema, path)
	}
	switch t.Kind {
	case avro.Boolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case avro.Int:
		switch t.LogicalType {
		case "date":
			return iceberg.PrimitiveTypes.Date, nil
		case "time-millis":
			return iceberg.PrimitiveTypes.Time, nil
		}
		return iceberg.PrimitiveTypes.Int32, nil
	case avro.Long:
		switch t.LogicalType {
		case "timestamp-millis", "timestamp-micros":
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case "local-timestamp-millis", "local-timestamp-micros":
			return iceberg.PrimitiveTypes.Timestamp, nil
		case "time-micros":
			return iceberg.PrimitiveTypes.Time, nil
		}
		return iceberg.PrimitiveTypes.Int64, nil
	case avro.Float:
		return iceberg.PrimitiveTypes.Float32, nil
	case avro.Double:
		return iceberg.PrimitiveTypes.Float64, nil
	case avro.String, avro.Enum:
		return iceberg.PrimitiveTypes.String, nil
	case avro.Bytes, avro.Fixed:
		if t.LogicalType == "decimal" {
			ps := b.decimals[t]
			p, s := ps[0], ps[1]
			if p < 1 || p > 38 || s < 0 || s > p {
				return nil, fmt.Errorf("%w: field %s: decimal(%d,%d) (Iceberg decimals have 1 to 38 digits)", ErrSchema, path, p, s)
			}
			return iceberg.DecimalTypeOf(p, s), nil
		}
		if t.Kind == avro.Fixed {
			return iceberg.FixedTypeOf(t.Size), nil
		}
		return iceberg.PrimitiveTypes.Binary, nil
	case avro.Record:
		st := &iceberg.StructType{}
		for _, f := range t.Fields {
			id := b.id()
			ft, err := b.typeOf(f.Type, path+"."+f.Name, depth+1)
			if err != nil {
				return nil, err
			}
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: id, Name: f.Name, Type: ft})
		}
		if len(st.FieldList) == 0 {
			return nil, fmt.Errorf("%w: field %s: a record with no fields", ErrSchema, path)
		}
		return st, nil
	case avro.Array:
		id := b.id()
		et, err := b.typeOf(t.Items, path+".element", depth+1)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: et}, nil
	case avro.Map:
		kid, vid := b.id(), b.id()
		vt, err := b.typeOf(t.Values, path+".value", depth+1)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: iceberg.PrimitiveTypes.String, ValueID: vid, ValueType: vt}, nil
	case avro.Union:
		members := nonNull(t)
		switch len(members) {
		case 0:
			return nil, fmt.Errorf("%w: field %s: a union of only null", ErrSchema, path)
		case 1:
			return b.typeOf(members[0], path, depth+1)
		}
		// Several types: a struct of optional members, as parquet-avro and
		// the Hive tables map them (member0, member1, ...).
		st := &iceberg.StructType{}
		for i, m := range members {
			id := b.id()
			mt, err := b.typeOf(m, fmt.Sprintf("%s.member%d", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			st.FieldList = append(st.FieldList, iceberg.NestedField{ID: id, Name: fmt.Sprintf("member%d", i), Type: mt})
		}
		return st, nil
	}
	return nil, fmt.Errorf("%w: field %s: Avro %s has no Iceberg type", ErrSchema, path, t.Kind)
}

func nonNull(t *avro.Type) []*avro.Type {
	var out []*avro.Type
	for _, b := range t.Branches {
		if b.Kind != avro.Null {
			out = append(out, b)
		}
	}
	return out
}

// decimals reads the precision and scale of the decimal types of s, which
// schema/avro's Type does not keep, from the schema's JSON walked beside
// its Type tree.
func decimals(s *avro.Schema) map[*avro.Type][2]int {
	var doc any
	out := map[*avro.Type][2]int{}
	if json.Unmarshal([]byte(s.Text), &doc) != nil {
		return out
	}
	var walk func(t *avro.Type, d any, depth int)
	walk = func(t *avro.Type, d any, depth int) {
		if depth > 64 || t == nil {
			return
		}
		switch d := d.(type) {
		case []any:
			if t.Kind == avro.Union && len(d) == len(t.Branches) {
				for i, b := range t.Branches {
					walk(b, d[i], depth+1)
				}
			}
		case map[string]any:
			switch inner := d["type"].(type) {
			case map[string]any, []any:
				walk(t, inner, depth+1)
				return
			}
			if d["logicalType"] == "decimal" {
				p, _ := d["precision"].(float64)
				sc, _ := d["scale"].(float64)
				out[t] = [2]int{int(p), int(sc)}
			}
			switch t.Kind {
			case avro.Record:
				fs, _ := d["fields"].([]any)
				if len(fs) == len(t.Fields) {
					for i, f := range t.Fields {
						fd, _ := fs[i].(map[string]any)
						walk(f.Type, fd["type"], depth+1)
					}
				}
			case avro.Array:
				walk(t.Items, d["items"], depth+1)
			case avro.Map:
				walk(t.Values, d["values"], depth+1)
			}
		}
	}
	walk(s.Root, doc, 0)
	return out
}

// checkTypes compares a table's column types with a new schema's by name
// and refuses a change other than Iceberg's promotions (int to long, float
// to double, a wider decimal of the same scale).
func checkTypes(topic string, old, next *iceberg.Schema) error {
	for _, nf := range next.Fields() {
		of, ok := old.FindFieldByName(nf.Name)
		if !ok {
			continue
		}
		if err := compareType(topic, nf.Name, of.Type, nf.Type); err != nil {
			return err
		}
	}
	return nil
}

func compareType(topic, path string, old, next iceberg.Type) error {
	changed := func() error {
		return fmt.Errorf("%w: topic %s field %s: %s -> %s", ErrTypeChange, topic, path, old, next)
	}
	switch o := old.(type) {
	case *iceberg.StructType:
		n, ok := next.(*iceberg.StructType)
		if !ok {
			return changed()
		}
		for _, nf := range n.FieldList {
			for _, of := range o.FieldList {
				if of.Name == nf.Name {
					if err := compareType(topic, path+"."+nf.Name, of.Type, nf.Type); err != nil {
						return err
					}
				}
			}
		}
		return nil
	case *iceberg.ListType:
		n, ok := next.(*iceberg.ListType)
		if !ok {
			return changed()
		}
		return compareType(topic, path+".element", o.Element, n.Element)
	case *iceberg.MapType:
		n, ok := next.(*iceberg.MapType)
		if !ok {
			return changed()
		}
		return compareType(topic, path+".value", o.ValueType, n.ValueType)
	}
	if old.Equals(next) {
		return nil
	}
	switch o := old.(type) {
	case iceberg.Int32Type:
		if _, ok := next.(iceberg.Int64Type); ok {
			return nil
		}
	case iceberg.Float32Type:
		if _, ok := next.(iceberg.Float64Type); ok {
			return nil
		}
	case iceberg.DecimalType:
		if n, ok := next.(iceberg.DecimalType); ok && n.Scale() == o.Scale() && n.Precision() >= o.Precision() {
			return nil
		}
	}
	return changed()
}

// branchKey is goavro's name for union branch t in native values.
func branchKey(t *avro.Type) string {
	if t.Name != "" {
		return t.Name
	}
	k := t.Kind.String()
	if t.LogicalType != "" && goavroLogical[k+"."+t.LogicalType] {
		return k + "." + t.LogicalType
	}
	return k
}

// columnPath is the dotted path of a top-level field name.
func columnPath(name string) []string { return strings.Split(name, ".") }
