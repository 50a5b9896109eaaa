package icetable

import (
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/tributary/tributary/schema/avro"
)

// Record is one Kafka record for Append: where it was in the topic and its
// value decoded by goavro (codec.NativeFromBinary) with the table's Avro
// schema (the loader resolves other writer schemas to it first).
type Record struct {
	Partition int32
	Offset    int64
	// Timestamp is the Kafka record timestamp (_kafka.timestamp).
	Timestamp time.Time
	Value     any
}

// rowWriter appends records to an Arrow record builder whose schema is the
// table's: columns are matched to the Avro schema's fields by name, so a
// column the Avro schema lacks (dropped in a later version) is null.
type rowWriter struct {
	schema *iceberg.Schema
	avro   *avro.Schema
}

func (w rowWriter) append(rb *array.RecordBuilder, r Record) error {
	rec, ok := r.Value.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: value of %d@%d is %T, not a record", ErrValue, r.Partition, r.Offset, r.Value)
	}
	for i, f := range w.schema.Fields() {
		b := rb.Field(i)
		if f.Name == kafkaColumn {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(r.Partition)
			sb.FieldBuilder(1).(*array.Int64Builder).Append(r.Offset)
			sb.FieldBuilder(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Timestamp.UnixMicro()))
			continue
		}
		af := avroField(w.avro.Root, f.Name)
		if af == nil {
			b.AppendNull()
			continue
		}
		if err := appendValue(b, f.Type, af.Type, rec[f.Name], f.Name); err != nil {
			return fmt.Errorf("record %d@%d: %w", r.Partition, r.Offset, err)
		}
	}
	return nil
}

func avroField(rec *avro.Type, name string) *avro.Field {
	for _, f := range rec.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func appendValue(b array.Builder, it iceberg.Type, at *avro.Type, v any, path string) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error {
		return fmt.Errorf("%w: field %s: %T for Avro %s", ErrValue, path, v, at.Kind)
	}
	switch at.Kind {
	case avro.Union:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return bad()
		}
		members := nonNull(at)
		for key, bv := range m {
			idx := slices.IndexFunc(members, func(t *avro.Type) bool { return branchKey(t) == key })
			if idx < 0 {
				return fmt.Errorf("%w: field %s: union branch %q not in schema", ErrValue, path, key)
			}
			if len(members) == 1 {
				return appendValue(b, it, members[0], bv, path)
			}
			sb := b.(*array.StructBuilder)
			st := it.(*iceberg.StructType)
			sb.Append(true)
			name := fmt.Sprintf("member%d", idx)
			for j, f := range st.FieldList {
				if f.Name == name {
					if err := appendValue(sb.FieldBuilder(j), f.Type, members[idx], bv, path+"."+name); err != nil {
						return err
					}
				} else {
					sb.FieldBuilder(j).AppendNull()
				}
			}
		}
		return nil
	case avro.Record:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		sb := b.(*array.StructBuilder)
		st := it.(*iceberg.StructType)
		sb.Append(true)
		for j, f := range st.FieldList {
			af := avroField(at, f.Name)
			var fv any
			if af != nil {
				fv = m[f.Name]
			}
			if af == nil || fv == nil {
				sb.FieldBuilder(j).AppendNull()
				continue
			}
			if err := appendValue(sb.FieldBuilder(j), f.Type, af.Type, fv, path+"."+f.Name); err != nil {
				return err
			}
		}
		return nil
	case avro.Array:
		items, ok := v.([]any)
		if !ok {
			return bad()
		}
		lb := b.(*array.ListBuilder)
		lt := it.(*iceberg.ListType)
		lb.Append(true)
		for _, item := range items {
			if err := appendValue(lb.ValueBuilder(), lt.Element, at.Items, item, path+".element"); err != nil {
				return err
			}
		}
		return nil
	case avro.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		mb := b.(*array.MapBuilder)
		mt := it.(*iceberg.MapType)
		mb.Append(true)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			mb.KeyBuilder().(*array.StringBuilder).Append(k)
			if err := appendValue(mb.ItemBuilder(), mt.ValueType, at.Values, m[k], path+".value"); err != nil {
				return err
			}
		}
		return nil
	}
	return appendPrimitive(b, it, at, v, path, bad)
}

func appendPrimitive(b array.Builder, it iceberg.Type, at *avro.Type, v any, path string, bad func() error) error {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
		case int32:
			b.Append(int64(x))
		default:
			return bad()
		}
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case float32:
			b.Append(float64(x))
		default:
			return bad()
		}
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.FixedSizeBinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Date32Builder:
		switch x := v.(type) {
		case time.Time:
			b.Append(arrow.Date32FromTime(x.UTC()))
		case int32:
			b.Append(arrow.Date32(x))
		default:
			return bad()
		}
	case *array.Time64Builder:
		switch x := v.(type) {
		case time.Duration:
			b.Append(arrow.Time64(x.Microseconds()))
		case int32: // time-millis goavro did not decode
			b.Append(arrow.Time64(int64(x) * 1000))
		case int64:
			b.Append(arrow.Time64(x))
		default:
			return bad()
		}
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case time.Time:
			b.Append(arrow.Timestamp(x.UnixMicro()))
		case int64: // local-timestamp-*, which goavro leaves as long
			if at.LogicalType == "local-timestamp-millis" || at.LogicalType == "timestamp-millis" {
				x *= 1000
			}
			b.Append(arrow.Timestamp(x))
		default:
			return bad()
		}
	case *array.Decimal128Builder:
		dt := it.(iceberg.DecimalType)
		n, err := unscaled(v, dt.Scale())
		if err != nil {
			return fmt.Errorf("%w: field %s: %v", ErrValue, path, err)
		}
		if n.BitLen() > 127 {
			return fmt.Errorf("%w: field %s: decimal out of range", ErrValue, path)
		}
		b.Append(decimal128.FromBigInt(n))
	default:
		return fmt.Errorf("%w: field %s: no writer for %T", ErrValue, path, b)
	}
	return nil
}

// unscaled is a decimal value as its unscaled integer: goavro gives
// *big.Rat for bytes decimals and the two's-complement bytes of fixed ones.
func unscaled(v any, scale int) (*big.Int, error) {
	switch x := v.(type) {
	case *big.Rat:
		r := new(big.Rat).Mul(x, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if !r.IsInt() {
			return nil, fmt.Errorf("%s has more than %d decimal places", x.FloatString(scale+3), scale)
		}
		return r.Num(), nil
	case []byte:
		n := new(big.Int).SetBytes(x)
		if len(x) > 0 && x[0]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(x))))
		}
		return n, nil
	}
	return nil, fmt.Errorf("decimal as %T", v)
}
