package tables

import (
	"encoding/json"
	"fmt"
	"strings"

	hms "github.com/beltran/gohive/hive_metastore"
	"github.com/tributary/tributary/schema/avro"
)

// columns maps an Avro record schema to Hive columns the way Hive's
// AvroSerDe derives them (AvroObjectInspectorGenerator): field names in
// lower case, records as struct, arrays, maps with string keys, a union
// of null and one type as that type (Hive columns are all nullable),
// enums as string, and the logical types date, timestamp-millis and
// decimal as Hive's date, timestamp and decimal(p,s) (the others as their
// underlying type, as Hive 2.3's AvroSerDe reads them) — except that a
// union of several non-null types is struct<member0:A,member1:B,...>, as
// Spark's Avro reader maps it (Hive's uniontype is unreadable to Spark).
// A recursive record has no Hive type.
func columns(schemaText string) ([]*hms.FieldSchema, error) {
	var doc any
	if err := json.Unmarshal([]byte(schemaText), &doc); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrUnsupportedSchema, err)
	}
	if s, ok := doc.(string); ok {
		doc = s
	}
	m := &typeMapper{named: map[string]any{}, open: map[string]bool{}}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "record" {
		return nil, fmt.Errorf("%w: the value schema is not a record (a table needs named columns)", ErrUnsupportedSchema)
	}
	name, ns := avro.NameOf(root, "")
	m.named[name] = root
	m.open[name] = true
	fields, _ := root["fields"].([]any)
	out := make([]*hms.FieldSchema, 0, len(fields))
	seen := map[string]bool{}
	for _, f := range fields {
		fd, _ := f.(map[string]any)
		fname, _ := fd["name"].(string)
		typ, err := m.hive(fd["type"], ns, 1)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fname, err)
		}
		col := strings.ToLower(fname)
		if seen[col] {
			return nil, fmt.Errorf("%w: fields %q differ only in case (Hive column names do not)", ErrUnsupportedSchema, fname)
		}
		seen[col] = true
		out = append(out, &hms.FieldSchema{Name: col, Type: typ})
	}
	return out, nil
}

type typeMapper struct {
	named map[string]any  // full name -> definition
	open  map[string]bool // records being mapped (recursion)
}

const maxDepth = 64

func (m *typeMapper) hive(s any, ns string, depth int) (string, error) {
	if depth > maxDepth {
		return "", fmt.Errorf("%w: nested deeper than %d", ErrUnsupportedSchema, maxDepth)
	}
	switch t := s.(type) {
	case string:
		return m.namedOrPrimitive(t, nil, ns, depth)
	case []any:
		return m.union(t, ns, depth)
	case map[string]any:
		typ, _ := t["type"].(string)
		switch typ {
		case "record":
			full, inner := avro.NameOf(t, ns)
			m.named[full] = t
			return m.record(full, t, inner, depth)
		case "enum", "fixed":
			full, _ := avro.NameOf(t, ns)
			m.named[full] = t
			if typ == "enum" {
				return "string", nil
			}
			// Hive 2.3's AvroSerDe reads a decimal of fixed as binary.
			return "binary", nil
		case "array":
			items, err := m.hive(t["items"], ns, depth+1)
			if err != nil {
				return "", err
			}
			return "array<" + items + ">", nil
		case "map":
			values, err := m.hive(t["values"], ns, depth+1)
			if err != nil {
				return "", err
			}
			return "map<string," + values + ">", nil
		case "":
			return m.hive(t["type"], ns, depth+1)
		default:
			return m.namedOrPrimitive(typ, t, ns, depth)
		}
	}
	return "", fmt.Errorf("%w: type %v", ErrUnsupportedSchema, s)
}

func (m *typeMapper) namedOrPrimitive(name string, def map[string]any, ns string, depth int) (string, error) {
	switch name {
	case "boolean":
		return "boolean", nil
	case "int":
		return logical(def, "int"), nil
	case "long":
		return logical(def, "bigint"), nil
	case "float":
		return "float", nil
	case "double":
		return "double", nil
	case "bytes":
		return logical(def, "binary"), nil
	case "string":
		return "string", nil
	case "null":
		return "", fmt.Errorf("%w: a null-only type has no Hive column type", ErrUnsupportedSchema)
	}
	full := name
	if !strings.Contains(name, ".") && ns != "" {
		full = ns + "." + name
	}
	d, ok := m.named[full]
	if !ok {
		d, ok = m.named[name]
		full = name
	}
	if !ok {
		return "", fmt.Errorf("%w: unknown type %q (schema references are not supported)", ErrUnsupportedSchema, name)
	}
	def, _ = d.(map[string]any)
	switch def["type"] {
	case "record":
		_, inner := avro.NameOf(def, ns)
		return m.record(full, def, inner, depth)
	case "enum":
		return "string", nil
	default:
		return "binary", nil
	}
}

func (m *typeMapper) record(full string, def map[string]any, ns string, depth int) (string, error) {
	if m.open[full] && depth > 1 {
		return "", fmt.Errorf("%w: record %s is recursive", ErrUnsupportedSchema, full)
	}
	m.open[full] = true
	defer delete(m.open, full)
	fields, _ := def["fields"].([]any)
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		fd, _ := f.(map[string]any)
		name, _ := fd["name"].(string)
		typ, err := m.hive(fd["type"], ns, depth+1)
		if err != nil {
			return "", fmt.Errorf("%s.%s: %w", full, name, err)
		}
		parts = append(parts, strings.ToLower(name)+":"+typ)
	}
	return "struct<" + strings.Join(parts, ",") + ">", nil
}

func (m *typeMapper) union(branches []any, ns string, depth int) (string, error) {
	var types []string
	for _, b := range branches {
		if b == "null" {
			continue
		}
		t, err := m.hive(b, ns, depth+1)
		if err != nil {
			return "", err
		}
		types = append(types, t)
	}
	switch len(types) {
	case 0:
		return "", fmt.Errorf("%w: a null-only union has no Hive column type", ErrUnsupportedSchema)
	case 1:
		return types[0], nil
	}
	// Not uniontype, which Spark cannot read at all (one such column makes
	// the whole table unreadable): a struct of one field per branch, as
	// Spark's Avro reader and package compact's Parquet map it.
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("member%d:%s", i, t)
	}
	return "struct<" + strings.Join(parts, ",") + ">", nil
}

// MembersSuffix is appended to the name of a top-level field whose type
// is a union of several non-null types in the Avro schema literal of the
// table and of its Avro partitions (see hiveLiteral).
const MembersSuffix = "_members"

// hiveLiteral returns the Avro schema literal registered for the table and
// its Avro partitions: schemaText with each top-level field whose type is
// a union of several non-null types replaced by a field <name>_members
// (MembersSuffix), default null, of a record of optional member0,
// member1, ... Hive's AvroSerDe would map the union to uniontype, which
// Spark cannot read, and derives a table's columns from its literal, which
// Spark also uses as the reader schema of every Avro partition; renamed,
// Avro's schema resolution skips the written union and gives the default.
// So the table is readable and the column is null in Avro partitions;
// Parquet partitions show the members when the table can be read by
// position (indexAccess). A union of several
// types nested deeper keeps Hive's uniontype: such a table stays
// unreadable to Spark (ErrUnsupportedSchema is not raised, since other
// engines read it).
func hiveLiteral(schemaText string) (string, error) {
	var root map[string]any
	if err := json.Unmarshal([]byte(schemaText), &root); err != nil || root["type"] != "record" {
		return schemaText, nil // columns reports what is wrong
	}
	fields, _ := root["fields"].([]any)
	changed := false
	for i, f := range fields {
		fd, _ := f.(map[string]any)
		branches, ok := fd["type"].([]any)
		if !ok {
			continue
		}
		var members []any
		for _, b := range branches {
			if b != "null" {
				members = append(members, map[string]any{"name": fmt.Sprintf("member%d", len(members)), "type": []any{"null", b}, "default": nil})
			}
		}
		if len(members) < 2 {
			continue
		}
		name, _ := fd["name"].(string)
		rec := map[string]any{"type": "record", "name": name + MembersSuffix, "fields": members}
		fields[i] = map[string]any{"name": name + MembersSuffix, "type": []any{"null", rec}, "default": nil}
		changed = true
	}
	if !changed {
		return schemaText, nil
	}
	b, err := json.Marshal(root)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnsupportedSchema, err)
	}
	return string(b), nil
}

// logical returns the Hive type of a logical type Hive's AvroSerDe knows,
// else base (an unknown logical type reads as its underlying type, as the
// Avro specification says).
func logical(def map[string]any, base string) string {
	if def == nil {
		return base
	}
	lt, _ := def["logicalType"].(string)
	switch {
	case lt == "date" && base == "int":
		return "date"
	case lt == "timestamp-millis" && base == "bigint":
		return "timestamp"
	case lt == "decimal" && base == "binary":
		p, _ := def["precision"].(float64)
		s, _ := def["scale"].(float64)
		if p >= 1 && p <= 38 && s >= 0 && s <= p {
			return fmt.Sprintf("decimal(%d,%d)", int(p), int(s))
		}
	}
	return base
}
