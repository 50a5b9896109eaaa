package avro

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Resolver converts values decoded with a writer schema into the shape of
// a reader schema. It is built once per (reader, writer) pair, after which
// it is read-only and safe for concurrent use.
type Resolver struct {
	reader, writer *Schema
	// branch is the reader union branch chosen for each writer type.
	branch   map[typePair]int
	defaults map[*Field]any
}

// NewResolver checks that reader can read writer's data (ErrIncompatible
// otherwise) and plans the conversion.
func NewResolver(reader, writer *Schema) (*Resolver, error) {
	c := newChecker()
	if problems := c.check(reader.Root, writer.Root, "/"); len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrIncompatible, problems[0])
	}
	rs := &Resolver{reader: reader, writer: writer, branch: map[typePair]int{}, defaults: map[*Field]any{}}
	if err := rs.plan(c, reader.Root, writer.Root, map[typePair]bool{}); err != nil {
		return nil, err
	}
	return rs, nil
}

func (rs *Resolver) plan(c *checker, r, w *Type, seen map[typePair]bool) error {
	key := typePair{r, w}
	if seen[key] {
		return nil
	}
	seen[key] = true
	if w.Kind == Union {
		for _, wb := range w.Branches {
			if err := rs.plan(c, r, wb, seen); err != nil {
				return err
			}
		}
		return nil
	}
	if r.Kind == Union {
		i := c.readerBranch(r, w)
		if i < 0 {
			return fmt.Errorf("%w: no reader branch for %s", ErrIncompatible, describe(w))
		}
		rs.branch[key] = i
		return rs.plan(c, r.Branches[i], w, seen)
	}
	switch r.Kind {
	case Record:
		for _, rf := range r.Fields {
			wf := writerField(rf, w)
			if wf == nil {
				d, err := defaultValue(rf.Default, rf.Type)
				if err != nil {
					return fmt.Errorf("%w: field %s default: %v", ErrInvalidSchema, rf.Name, err)
				}
				rs.defaults[rf] = d
				continue
			}
			if err := rs.plan(c, rf.Type, wf.Type, seen); err != nil {
				return err
			}
		}
	case Array:
		return rs.plan(c, r.Items, w.Items, seen)
	case Map:
		return rs.plan(c, r.Values, w.Values, seen)
	}
	return nil
}

// Resolve converts v, in goavro's native form for the writer schema, into
// the native form of the reader schema. v is not modified.
func (rs *Resolver) Resolve(v any) (any, error) {
	return rs.resolve(v, rs.reader.Root, rs.writer.Root)
}

func (rs *Resolver) resolve(v any, r, w *Type) (any, error) {
	if w.Kind == Union {
		wb, val, err := unionBranch(v, w)
		if err != nil {
			return nil, err
		}
		return rs.resolve(val, r, wb)
	}
	if r.Kind == Union {
		rb := r.Branches[rs.branch[typePair{r, w}]]
		out, err := rs.resolve(v, rb, w)
		if err != nil || rb.Kind == Null {
			return nil, err
		}
		return map[string]any{branchName(rb): out}, nil
	}
	if r.Kind != w.Kind {
		return promote(v, w.Kind, r.Kind)
	}
	switch r.Kind {
	case Record:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: record %s value is %T", ErrBadValue, w.Name, v)
		}
		out := make(map[string]any, len(r.Fields))
		for _, rf := range r.Fields {
			wf := writerField(rf, w)
			if wf == nil {
				out[rf.Name] = deepCopy(rs.defaults[rf])
				continue
			}
			fv, err := rs.resolve(m[wf.Name], rf.Type, wf.Type)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", rf.Name, err)
			}
			out[rf.Name] = fv
		}
		return out, nil
	case Enum:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: enum %s value is %T", ErrBadValue, w.Name, v)
		}
		if slices.Contains(r.Symbols, s) {
			return s, nil
		}
		if r.HasEnumDefault {
			return r.EnumDefault, nil
		}
		return nil, fmt.Errorf("%w: symbol %q not in reader enum %s", ErrIncompatible, s, r.Name)
	case Array:
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%w: array value is %T", ErrBadValue, v)
		}
		out := make([]any, len(list))
		for i, e := range list {
			ev, err := rs.resolve(e, r.Items, w.Items)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: map value is %T", ErrBadValue, v)
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, err := rs.resolve(e, r.Values, w.Values)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	}
	return v, nil
}

// unionBranch finds the writer branch of a goavro union value: nil for the
// null branch, else a one-entry map keyed by the branch name.
func unionBranch(v any, w *Type) (*Type, any, error) {
	if v == nil {
		for _, b := range w.Branches {
			if b.Kind == Null {
				return b, nil, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: null for a union without null", ErrBadValue)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, nil, fmt.Errorf("%w: union value is %T, want a one-entry map", ErrBadValue, v)
	}
	for name, val := range m {
		for _, b := range w.Branches {
			if branchName(b) == name {
				return b, val, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: union has no branch %q", ErrBadValue, name)
	}
	panic("unreachable")
}

func promote(v any, from, to Kind) (any, error) {
	switch x := v.(type) {
	case int32:
		switch to {
		case Long:
			return int64(x), nil
		case Float:
			return float32(x), nil
		case Double:
			return float64(x), nil
		}
	case int64:
		switch to {
		case Float:
			return float32(x), nil
		case Double:
			return float64(x), nil
		}
	case float32:
		if to == Double {
			return float64(x), nil
		}
	case string:
		if to == Bytes {
			return []byte(x), nil
		}
	case []byte:
		if to == String {
			return string(x), nil
		}
	}
	return nil, fmt.Errorf("%w: cannot promote %s value %T to %s", ErrBadValue, from, v, to)
}

// defaultValue converts a field default from its JSON encoding into the
// native form goavro uses for t. A union's default is of its first branch.
func defaultValue(raw json.RawMessage, t *Type) (any, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return nativeFromJSON(v, t)
}

func nativeFromJSON(v any, t *Type) (any, error) {
	bad := func() (any, error) {
		return nil, fmt.Errorf("default %v does not fit %s", v, describe(t))
	}
	switch t.Kind {
	case Union:
		if len(t.Branches) == 0 {
			return bad()
		}
		b := t.Branches[0]
		out, err := nativeFromJSON(v, b)
		if err != nil || b.Kind == Null {
			return nil, err
		}
		return map[string]any{branchName(b): out}, nil
	case Null:
		if v != nil {
			return bad()
		}
		return nil, nil
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return b, nil
	case Int, Long, Float, Double:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		switch t.Kind {
		case Int:
			i, err := n.Int64()
			return int32(i), err
		case Long:
			return n.Int64()
		case Float:
			f, err := n.Float64()
			return float32(f), err
		default:
			return n.Float64()
		}
	case String, Enum:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		return s, nil
	case Bytes, Fixed:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		// Avro JSON maps each byte to the code point of the same value.
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff {
				return bad()
			}
			out = append(out, byte(r))
		}
		return out, nil
	case Array:
		list, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(list))
		for i, e := range list {
			ev, err := nativeFromJSON(e, t.Items)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, err := nativeFromJSON(e, t.Values)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case Record:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(t.Fields))
		for _, f := range t.Fields {
			fv, present := m[f.Name]
			if !present {
				if !f.HasDefault() {
					return nil, fmt.Errorf("default of record %s lacks field %s", t.Name, f.Name)
				}
				d, err := defaultValue(f.Default, f.Type)
				if err != nil {
					return nil, err
				}
				out[f.Name] = d
				continue
			}
			nv, err := nativeFromJSON(fv, f.Type)
			if err != nil {
				return nil, err
			}
			out[f.Name] = nv
		}
		return out, nil
	}
	return bad()
}

// deepCopy copies the maps and slices of a default so callers may modify
// what Resolve returns.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := maps.Clone(x)
		for k, e := range out {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := slices.Clone(x)
		for i, e := range out {
			out[i] = deepCopy(e)
		}
		return out
	case []byte:
		return slices.Clone(x)
	}
	return v
}
