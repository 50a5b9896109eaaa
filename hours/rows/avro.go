package rows

import (
	"fmt"
	"time"

	"github.com/tributary/tributary/schema/avro"
)

// avroPlain turns goavro's native values into plain ones, directed by the
// writer schema (parsed JSON), so that a union is told from a record or a
// map with one entry.
type avroPlain struct {
	named map[string]any // full name -> definition
}

// define records the named types of s (records, enums, fixed) and
// returns s's full name and the namespace its fields are in.
func (a *avroPlain) define(s map[string]any, ns string) (string, string) {
	full, inner := avro.NameOf(s, ns)
	a.named[full] = s
	return full, inner
}

// branchName is the name goavro gives a union branch of schema s.
func (a *avroPlain) branchName(s any, ns string) string {
	switch t := s.(type) {
	case string:
		if _, ok := a.named[avro.FullName(t, ns)]; ok {
			return avro.FullName(t, ns)
		}
		return t
	case map[string]any:
		typ, _ := t["type"].(string)
		switch typ {
		case "record", "error", "enum", "fixed":
			full, _ := a.define(t, ns)
			return full
		}
		if lt, ok := t["logicalType"].(string); ok {
			return typ + "." + lt
		}
		return typ
	}
	return ""
}

func (a *avroPlain) plain(s any, ns string, v any) (any, error) {
	switch t := s.(type) {
	case string:
		if def, ok := a.named[avro.FullName(t, ns)]; ok {
			return a.plain(def, ns, v)
		}
		return plainPrimitive(v), nil
	case []any: // union
		if v == nil {
			return nil, nil
		}
		u, ok := v.(map[string]any)
		if !ok || len(u) != 1 {
			return nil, fmt.Errorf("union value %T %v", v, v)
		}
		for k, inner := range u {
			for _, b := range t {
				if a.branchName(b, ns) == k {
					return a.plain(b, ns, inner)
				}
			}
			return nil, fmt.Errorf("union value of branch %q, not in the schema", k)
		}
	case map[string]any:
		typ := t["type"]
		switch typ {
		case "record", "error":
			_, inner := a.define(t, ns)
			rec, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("record value %T", v)
			}
			out := make(map[string]any, len(rec))
			fields, _ := t["fields"].([]any)
			for _, f := range fields {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				p, err := a.plain(fm["type"], inner, rec[name])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				out[name] = p
			}
			return out, nil
		case "enum", "fixed":
			a.define(t, ns)
			return v, nil
		case "array":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("array value %T", v)
			}
			out := make([]any, len(list))
			for i, e := range list {
				p, err := a.plain(t["items"], ns, e)
				if err != nil {
					return nil, err
				}
				out[i] = p
			}
			return out, nil
		case "map":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("map value %T", v)
			}
			out := make(map[string]any, len(m))
			for k, e := range m {
				p, err := a.plain(t["values"], ns, e)
				if err != nil {
					return nil, err
				}
				out[k] = p
			}
			return out, nil
		}
		if _, ok := typ.(string); ok {
			return plainPrimitive(v), nil // a primitive, maybe with a logical type goavro decoded
		}
		return a.plain(typ, ns, v) // {"type": <a schema>}
	}
	return nil, fmt.Errorf("schema %v is not understood", s)
}

func plainPrimitive(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC()
	}
	return v
}
