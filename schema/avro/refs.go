package avro

import (
	"encoding/json"
	"fmt"
)

// Schema references (Confluent's "references"): a schema may use named
// types that other schemas define. goavro knows no symbol table shared
// between codecs, so ParseWithReferences inlines each referenced type's
// definition at its first use and builds the codec from the result: the
// referenced definitions are first made context-free (every name fully
// qualified, "namespace" attributes dropped), so that an inlined copy means
// the same wherever it lands.

// qualifier walks a decoded schema, qualifying names and inlining the
// definitions of referenced types at first use. It never mutates its input.
type qualifier struct {
	// known are the qualified definitions the references supply.
	known map[string]any
	// defined are the names defined (or inlined) so far in this walk.
	defined map[string]bool
	// flat collects every definition met, with nested definitions replaced
	// by their names: what a schema referring to this one inlines.
	flat map[string]any
}

// lookup resolves a name used in namespace ns to a full name, defined or
// known; "" if neither.
func (q *qualifier) lookup(name, ns string) string {
	candidates := []string{name}
	if !containsDot(name) && ns != "" {
		candidates = []string{ns + "." + name, name}
	}
	for _, c := range candidates {
		if q.defined[c] {
			return c
		}
		if _, ok := q.known[c]; ok {
			return c
		}
	}
	return ""
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

func (q *qualifier) walk(v any, ns string, depth int) (any, error) {
	if depth > 256 {
		return nil, fmt.Errorf("schema nested too deeply")
	}
	switch v := v.(type) {
	case string:
		if _, ok := primitives[v]; ok {
			return v, nil
		}
		full := q.lookup(v, ns)
		switch {
		case full == "":
			return v, nil // unknown: goavro reports it
		case q.defined[full]:
			return full, nil
		}
		return q.walk(q.known[full], "", depth+1)
	case []any:
		out := make([]any, len(v))
		for i, b := range v {
			w, err := q.walk(b, ns, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	case map[string]any:
		return q.walkObject(v, ns, depth)
	default:
		return v, nil
	}
}

func (q *qualifier) walkObject(m map[string]any, ns string, depth int) (any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	typ, isString := m["type"].(string)
	if !isString {
		if _, ok := m["type"]; !ok {
			return out, nil
		}
		t, err := q.walk(m["type"], ns, depth+1)
		if err != nil {
			return nil, err
		}
		out["type"] = t
		return out, nil
	}
	switch typ {
	case "record", "error", "enum", "fixed":
		name, _ := m["name"].(string)
		if name == "" {
			return out, nil // goavro reports it
		}
		full, inner := NameOf(m, ns)
		out["name"] = full
		delete(out, "namespace")
		if aliases := stringList(m["aliases"]); len(aliases) > 0 {
			qa := make([]any, len(aliases))
			for i, a := range aliases {
				qa[i] = FullName(a, inner)
			}
			out["aliases"] = qa
		}
		q.defined[full] = true
		if fields, ok := m["fields"].([]any); ok {
			qf := make([]any, len(fields))
			flatFields := make([]any, len(fields))
			for i, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					qf[i], flatFields[i] = f, f
					continue
				}
				nf := make(map[string]any, len(fm))
				for k, v := range fm {
					nf[k] = v
				}
				ft, err := q.walk(fm["type"], inner, depth+1)
				if err != nil {
					return nil, err
				}
				nf["type"] = ft
				qf[i] = nf
				ff := make(map[string]any, len(nf))
				for k, v := range nf {
					ff[k] = v
				}
				ff["type"] = flatten(ft)
				flatFields[i] = ff
			}
			out["fields"] = qf
			flat := make(map[string]any, len(out))
			for k, v := range out {
				flat[k] = v
			}
			flat["fields"] = flatFields
			q.flat[full] = flat
		} else {
			q.flat[full] = out
		}
		return out, nil
	case "array", "map":
		key := "items"
		if typ == "map" {
			key = "values"
		}
		if sub, ok := m[key]; ok {
			w, err := q.walk(sub, ns, depth+1)
			if err != nil {
				return nil, err
			}
			out[key] = w
		}
		return out, nil
	default:
		t, err := q.walk(typ, ns, depth+1)
		if err != nil {
			return nil, err
		}
		out["type"] = t
		return out, nil
	}
}

// flatten replaces the named definitions in a walked schema by their
// (qualified) names.
func flatten(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, b := range v {
			out[i] = flatten(b)
		}
		return out
	case map[string]any:
		switch t := v["type"].(type) {
		case string:
			switch t {
			case "record", "error", "enum", "fixed":
				return v["name"]
			case "array", "map":
				key := "items"
				if t == "map" {
					key = "values"
				}
				out := make(map[string]any, len(v))
				for k, x := range v {
					out[k] = x
				}
				out[key] = flatten(v[key])
				return out
			}
			return v
		default:
			out := make(map[string]any, len(v))
			for k, x := range v {
				out[k] = x
			}
			out["type"] = flatten(t)
			return out
		}
	}
	return v
}

// ParseWithReferences parses a schema that may use the named types of refs
// (already parsed schemas, themselves possibly with references). Types the
// text defines itself take precedence. The result's Canonical is the
// canonical form of the schema with the referenced types inlined; its Text
// stays the text given.
func ParseWithReferences(text string, refs []*Schema) (*Schema, error) {
	doc, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	q := &qualifier{known: map[string]any{}, defined: map[string]bool{}, flat: map[string]any{}}
	for _, r := range refs {
		for name, def := range r.named {
			q.known[name] = def
		}
	}
	walked, err := q.walk(doc, "", 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	codecText := text
	if len(refs) > 0 {
		raw, err := json.Marshal(walked)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
		}
		codecText = string(raw)
	}
	s, err := parseDoc(text, codecText, walked)
	if err != nil {
		return nil, err
	}
	s.named = q.flat
	for name, def := range q.known {
		// Transitive references: a schema referring to this one may use
		// the types this one got from its own references.
		if _, ok := s.named[name]; !ok {
			s.named[name] = def
		}
	}
	return s, nil
}
