package compact

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/tributary/tributary/schema/avro"
)

// node is one field of the Parquet schema mapped from an Avro schema, with
// what shredding an Avro value (goavro's native form) into it needs.
type node struct {
	name     string
	optional bool
	// unwrap: the Avro value is a union with null (nil or a one-entry map
	// {branch: value}) and this node holds the branch's value.
	unwrap   bool
	kind     nodeKind
	field    string  // record children: the Avro field name
	children []*node // record: fields; list: [element]; map: [key, value]; union: members
	branches []string
	// repLevel is the repetition level of this node's values' innermost
	// repeated ancestor (for lists and maps, of their repeated middle level).
	repLevel int32
	leaf     int // index of the column, for leaves
	tag      string
	conv     func(any) (any, error)
}

type nodeKind int

const (
	kindLeaf nodeKind = iota
	kindRecord
	kindList
	kindMap
	kindUnion
)

// goavroLogical are the logical types goavro decodes (and names union
// branches by).
var goavroLogical = map[string]bool{"long.timestamp-millis": true, "long.timestamp-micros": true,
	"int.time-millis": true, "long.time-micros": true, "int.date": true, "bytes.decimal": true}

// mapper turns Avro schemas into node trees.
type mapper struct {
	named  map[string]any // full name -> definition, for references
	leaves []*node
	inName int
	// int64Millis maps timestamp-millis to INT64 TIMESTAMP(MILLIS, UTC)
	// instead of INT96 (Config.TimestampType).
	int64Millis bool
}

// branchKey is goavro's key for a union branch of schema s.
func (m *mapper) branchKey(s any, ns string) string {
	switch s := s.(type) {
	case string:
		if _, ok := m.named[s]; ok {
			return s
		}
		if _, ok := m.named[ns+"."+s]; ok && ns != "" {
			return ns + "." + s
		}
		return s
	case map[string]any:
		t, _ := s["type"].(string)
		switch t {
		case "record", "enum", "fixed", "error":
			n, _ := avro.NameOf(s, ns)
			return n
		}
		// goavro names a branch of a logical type it knows TYPE.LOGICAL,
		// of one it does not (local-timestamp-*, uuid) by its type.
		if lt, ok := s["logicalType"].(string); ok && goavroLogical[t+"."+lt] {
			return t + "." + lt
		}
		return t
	}
	return ""
}

func (m *mapper) build(s any, ns, name string, depth int, rep int32) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("compact: schema nested too deeply (recursive type?)")
	}
	switch s := s.(type) {
	case []any: // union
		var nonNull []any
		hasNull := false
		for _, b := range s {
			if b == "null" {
				hasNull = true
				continue
			}
			nonNull = append(nonNull, b)
		}
		switch {
		case len(nonNull) == 0:
			return nil, fmt.Errorf("compact: field %s: a union of only null has no Parquet type", name)
		case len(nonNull) == 1:
			n, err := m.build(nonNull[0], ns, name, depth+1, rep)
			if err != nil {
				return nil, err
			}
			n.optional = n.optional || hasNull
			n.unwrap = true
			return n, nil
		}
		// Several non-null branches: a group with one optional member per
		// branch, as parquet-avro maps them (member0, member1, ...).
		u := &node{name: name, kind: kindUnion, optional: hasNull, repLevel: rep}
		for i, b := range nonNull {
			c, err := m.build(b, ns, fmt.Sprintf("member%d", i), depth+1, rep)
			if err != nil {
				return nil, err
			}
			c.optional = true
			u.children = append(u.children, c)
			u.branches = append(u.branches, m.branchKey(b, ns))
		}
		return u, nil
	case string:
		if def, ok := m.named[s]; ok {
			return m.build(def, ns, name, depth+1, rep)
		}
		if def, ok := m.named[ns+"."+s]; ok && ns != "" {
			return m.build(def, ns, name, depth+1, rep)
		}
		return m.primitive(s, nil, name, rep)
	case map[string]any:
		t, _ := s["type"].(string)
		if inner, ok := s["type"].(map[string]any); ok && s["logicalType"] == nil {
			return m.build(inner, ns, name, depth+1, rep)
		}
		if inner, ok := s["type"].([]any); ok {
			return m.build(inner, ns, name, depth+1, rep)
		}
		switch t {
		case "record", "error":
			full, rns := avro.NameOf(s, ns)
			m.named[full] = s
			fields, _ := s["fields"].([]any)
			if len(fields) == 0 {
				return nil, fmt.Errorf("compact: record %s has no fields (Parquet groups need one)", full)
			}
			r := &node{name: name, kind: kindRecord, repLevel: rep}
			for _, f := range fields {
				fd, _ := f.(map[string]any)
				fname, _ := fd["name"].(string)
				c, err := m.build(fd["type"], rns, fname, depth+1, rep)
				if err != nil {
					return nil, err
				}
				c.field = fname
				r.children = append(r.children, c)
			}
			return r, nil
		case "enum":
			full, _ := avro.NameOf(s, ns)
			m.named[full] = s
			return m.leaf(name, utf8Tag, rep, convString)
		case "fixed":
			full, _ := avro.NameOf(s, ns)
			m.named[full] = s
			size, _ := s["size"].(float64)
			if s["logicalType"] == "decimal" {
				// No DECIMAL annotation: Hive 2.3's AvroSerDe reads a decimal
				// of fixed as binary, so the table's column is binary, and
				// Hive's Parquet reader fails on an annotated one in it.
				scale, _ := s["scale"].(float64)
				return m.leaf(name, fmt.Sprintf("type=FIXED_LEN_BYTE_ARRAY, length=%d", int(size)), rep, decimalConv(int(scale), int(size)))
			}
			return m.leaf(name, fmt.Sprintf("type=FIXED_LEN_BYTE_ARRAY, length=%d", int(size)), rep, convBytes)
		case "array":
			elem, err := m.build(s["items"], ns, "element", depth+1, rep+1)
			if err != nil {
				return nil, err
			}
			return &node{name: name, kind: kindList, children: []*node{elem}, repLevel: rep + 1}, nil
		case "map":
			key, _ := m.leaf("key", utf8Tag, rep+1, convString)
			val, err := m.build(s["values"], ns, "value", depth+1, rep+1)
			if err != nil {
				return nil, err
			}
			return &node{name: name, kind: kindMap, children: []*node{key, val}, repLevel: rep + 1}, nil
		default:
			return m.primitive(t, s, name, rep)
		}
	}
	return nil, fmt.Errorf("compact: field %s: unsupported schema %v", name, s)
}

func (m *mapper) primitive(t string, def map[string]any, name string, rep int32) (*node, error) {
	lt := ""
	if def != nil {
		lt, _ = def["logicalType"].(string)
	}
	// The logical types as doc.go's table maps them (and why).
	switch t + "." + lt {
	case "long.timestamp-millis":
		if m.int64Millis {
			return m.leaf(name, timestampTag("MILLIS", true), rep, convMillis)
		}
		// INT96: what Hive's Parquet reader up to 3.1 (Spark's built-in
		// Hive client) reads as a timestamp; it refuses INT64 ones.
		return m.leaf(name, "type=INT96, omitstats=true", rep, convInt96)
	case "long.timestamp-micros":
		return m.leaf(name, timestampTag("MICROS", true), rep, convMicros)
	case "long.local-timestamp-millis":
		return m.leaf(name, timestampTag("MILLIS", false), rep, convMillis)
	case "long.local-timestamp-micros":
		return m.leaf(name, timestampTag("MICROS", false), rep, convMicros)
	case "int.date":
		return m.leaf(name, "type=INT32, convertedtype=DATE, encoding=DELTA_BINARY_PACKED", rep, convDate)
	case "int.time-millis":
		// No TIME annotation: Spark's own reader (3.5 and 4.1) refuses a
		// file with one in any column; the value is the millisecond of the day.
		return m.leaf(name, "type=INT32, encoding=DELTA_BINARY_PACKED", rep, convTimeMillis)
	case "long.time-micros":
		return m.leaf(name, "type=INT64, encoding=DELTA_BINARY_PACKED", rep, convTimeMicros)
	case "bytes.decimal":
		return m.decimal(def, name, rep, 0)
	}
	switch t {
	case "boolean":
		return m.leaf(name, "type=BOOLEAN", rep, convAs[bool])
	case "int":
		return m.leaf(name, "type=INT32, encoding=DELTA_BINARY_PACKED", rep, convAs[int32])
	case "long":
		return m.leaf(name, "type=INT64, encoding=DELTA_BINARY_PACKED", rep, convAs[int64])
	case "float":
		return m.leaf(name, "type=FLOAT", rep, convAs[float32])
	case "double":
		return m.leaf(name, "type=DOUBLE", rep, convAs[float64])
	case "string":
		// uuid too: Parquet's UUID is a FIXED[16] no Spark or Hive reads.
		return m.leaf(name, utf8Tag, rep, convString)
	case "bytes":
		return m.leaf(name, "type=BYTE_ARRAY", rep, convBytes)
	}
	return nil, fmt.Errorf("compact: field %s: unsupported Avro type %q", name, t)
}

// timestampTag is an INT64 TIMESTAMP column of unit MILLIS or MICROS,
// UTC-adjusted (an instant: the converted type too, which implies it) or
// local (a date-time without a zone: no converted type, which would say
// UTC).
func timestampTag(unit string, utc bool) string {
	tag := "type=INT64, logicaltype=TIMESTAMP, logicaltype.unit=" + unit + ", logicaltype.isadjustedtoutc=" + fmt.Sprint(utc)
	if utc {
		tag += ", convertedtype=TIMESTAMP_" + unit
	}
	return tag + ", encoding=DELTA_BINARY_PACKED"
}

// decimal maps an Avro decimal to FIXED_LEN_BYTE_ARRAY DECIMAL: an Avro
// fixed keeps its size, bytes get the fewest bytes that hold the
// precision, as parquet-mr's legacy (Hive-compatible) format does. Hive's
// Parquet reader up to 3.1 reads no INT32 or INT64 decimals, and Spark's
// vectorized reader no BYTE_ARRAY ones.
func (m *mapper) decimal(def map[string]any, name string, rep int32, fixedSize int) (*node, error) {
	prec, _ := def["precision"].(float64)
	scale, _ := def["scale"].(float64)
	if prec <= 0 {
		return nil, fmt.Errorf("compact: field %s: decimal without a precision", name)
	}
	if fixedSize == 0 {
		fixedSize = decimalBytes(int(prec))
	}
	conv := decimalConv(int(scale), fixedSize)
	return m.leaf(name, fmt.Sprintf("type=FIXED_LEN_BYTE_ARRAY, length=%d, convertedtype=DECIMAL, precision=%d, scale=%d", fixedSize, int(prec), int(scale)), rep, conv)
}

// decimalBytes is the fewest bytes whose two's complement holds every
// unscaled value of precision digits.
func decimalBytes(precision int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	limit.Sub(limit, big.NewInt(1))
	return limit.BitLen()/8 + 1
}

func (m *mapper) leaf(name, typ string, rep int32, conv func(any) (any, error)) (*node, error) {
	n := &node{name: name, kind: kindLeaf, leaf: len(m.leaves), tag: typ, conv: conv, repLevel: rep}
	m.leaves = append(m.leaves, n)
	return n, nil
}

// jsonSchema renders the tree as parquet-go's JSON schema. Leaves appear in
// the same depth-first order as m.leaves, which is how columns are matched.
func (m *mapper) jsonSchema(root *node) string {
	type item struct {
		Tag    string  `json:"Tag"`
		Fields []*item `json:"Fields,omitempty"`
	}
	var render func(n *node) *item
	render = func(n *node) *item {
		m.inName++
		rt := "REQUIRED"
		if n.optional {
			rt = "OPTIONAL"
		}
		head := fmt.Sprintf("name=%s, inname=F%d, ", n.name, m.inName)
		switch n.kind {
		case kindLeaf:
			return &item{Tag: head + n.tag + ", repetitiontype=" + rt}
		case kindList:
			return &item{Tag: head + "type=LIST, repetitiontype=" + rt, Fields: []*item{render(n.children[0])}}
		case kindMap:
			return &item{Tag: head + "type=MAP, repetitiontype=" + rt, Fields: []*item{render(n.children[0]), render(n.children[1])}}
		default:
			it := &item{Tag: head + "repetitiontype=" + rt}
			for _, c := range n.children {
				it.Fields = append(it.Fields, render(c))
			}
			return it
		}
	}
	root.optional = false
	it := render(root)
	it.Tag = "name=parquet_go_root, repetitiontype=REQUIRED"
	b, _ := json.Marshal(it)
	return string(b)
}

func convAs[T any](v any) (any, error) {
	t, ok := v.(T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("value %v (%T) is not a %T", v, v, zero)
	}
	return t, nil
}

func convString(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a string", v, v)
}

func convBytes(v any) (any, error) {
	switch v := v.(type) {
	case []byte:
		return string(v), nil
	case string:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not bytes", v, v)
}

func convMillis(v any) (any, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UnixMilli(), nil
	case int64:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a timestamp", v, v)
}

func convMicros(v any) (any, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UnixMicro(), nil
	case int64:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a timestamp", v, v)
}

// convInt96 turns a timestamp-millis value into Parquet's INT96 (as Hive,
// Impala and Spark write it): 8 bytes of nanoseconds within the day, then
// 4 bytes of Julian day number, little-endian, UTC. Computed from the
// millisecond so that no instant a long holds overflows.
func convInt96(v any) (any, error) {
	ms, err := convMillis(v)
	if err != nil {
		return nil, err
	}
	const msPerDay = 86400000
	const julianEpoch = 2440588 // the Julian day number of 1970-01-01
	days := ms.(int64) / msPerDay
	if ms.(int64)%msPerDay < 0 {
		days--
	}
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], uint64((ms.(int64)-days*msPerDay)*1e6))
	binary.LittleEndian.PutUint32(b[8:], uint32(days+julianEpoch))
	return string(b[:]), nil
}

func convDate(v any) (any, error) {
	switch v := v.(type) {
	case time.Time:
		days := v.Unix() / 86400
		if v.Unix()%86400 < 0 {
			days--
		}
		return int32(days), nil
	case int32:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a date", v, v)
}

func convTimeMillis(v any) (any, error) {
	switch v := v.(type) {
	case time.Duration:
		return int32(v / time.Millisecond), nil
	case int32:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a time of day", v, v)
}

func convTimeMicros(v any) (any, error) {
	switch v := v.(type) {
	case time.Duration:
		return int64(v / time.Microsecond), nil
	case int64:
		return v, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a time of day", v, v)
}

// decimalConv encodes goavro's *big.Rat as Parquet's DECIMAL: the unscaled
// integer in big-endian two's complement (padded to size for fixed).
func decimalConv(scale, size int) func(any) (any, error) {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	return func(v any) (any, error) {
		var unscaled *big.Int
		switch v := v.(type) {
		case *big.Rat:
			n := new(big.Int).Mul(v.Num(), pow)
			unscaled = n.Quo(n, v.Denom())
		case []byte:
			return string(v), nil
		default:
			return nil, fmt.Errorf("value %v (%T) is not a decimal", v, v)
		}
		b := twosComplement(unscaled)
		if size > 0 {
			if len(b) > size {
				return nil, fmt.Errorf("decimal %v does not fit in %d bytes", unscaled, size)
			}
			pad := byte(0)
			if unscaled.Sign() < 0 {
				pad = 0xff
			}
			for len(b) < size {
				b = append([]byte{pad}, b...)
			}
		}
		return string(b), nil
	}
}

func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n = 2^k - |n| for k a multiple of 8 large enough for the sign bit.
	k := (n.BitLen()/8 + 1) * 8
	m := new(big.Int).Lsh(big.NewInt(1), uint(k))
	m.Add(m, n)
	b := m.Bytes()
	for len(b) < k/8 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// utf8Tag is a string column, dictionary-encoded (pages.go): event
// strings repeat (hosts, pages, enums, user ids), and a unique one costs
// an index besides its dictionary entry, which the codec mostly absorbs.
const utf8Tag = "type=BYTE_ARRAY, convertedtype=UTF8, encoding=RLE_DICTIONARY"
