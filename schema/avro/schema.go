package avro

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/linkedin/goavro/v2"
)

// Kind is the Avro type of a Type.
type Kind int

const (
	Null Kind = iota + 1
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var kindNames = map[Kind]string{
	Null: "null", Boolean: "boolean", Int: "int", Long: "long", Float: "float",
	Double: "double", Bytes: "bytes", String: "string", Record: "record",
	Enum: "enum", Array: "array", Map: "map", Union: "union", Fixed: "fixed",
}

var primitives = map[string]Kind{
	"null": Null, "boolean": Boolean, "int": Int, "long": Long, "float": Float,
	"double": Double, "bytes": Bytes, "string": String,
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Type is one node of a parsed schema. Named types (record, enum, fixed)
// appear once; references to them point at the same *Type.
type Type struct {
	Kind Kind
	// Name is the full name of a record, enum or fixed.
	Name string
	// Aliases are the full names of the type's aliases.
	Aliases []string
	// LogicalType is the logicalType attribute, if any.
	LogicalType string
	Fields      []*Field // record
	Symbols     []string // enum
	// EnumDefault is the enum's "default" symbol; HasEnumDefault says it is set.
	EnumDefault    string
	HasEnumDefault bool
	Items          *Type   // array
	Values         *Type   // map
	Branches       []*Type // union
	Size           int     // fixed
}

// Field is a record field.
type Field struct {
	Name    string
	Aliases []string
	Type    *Type
	// Default is the field's default as JSON; nil when it has none.
	Default json.RawMessage
}

// HasDefault reports whether the field declares a default (null counts).
func (f *Field) HasDefault() bool { return f.Default != nil }

// Schema is a parsed, validated Avro schema.
type Schema struct {
	// Text is the schema as given to Parse.
	Text string
	// Canonical is the Parsing Canonical Form; two schemas with the same
	// canonical form read and write the same bytes.
	Canonical string
	Root      *Type
	codec     *goavro.Codec
	// named holds the context-free definitions of the named types the
	// schema defines or got from its references, for schemas referring to
	// it (refs.go).
	named map[string]any
}

// Codec returns the goavro codec of the schema.
func (s *Schema) Codec() *goavro.Codec { return s.codec }

// Fingerprint is the hex SHA-256 of the canonical form, the identity the
// registry uses to give one schema one id.
func (s *Schema) Fingerprint() string {
	sum := sha256.Sum256([]byte(s.Canonical))
	return hex.EncodeToString(sum[:])
}

// Parse validates text as an Avro schema and builds its Type tree.
func Parse(text string) (*Schema, error) {
	return ParseWithReferences(text, nil)
}

// parseDoc builds a Schema from text as given, the text goavro compiles
// (text with referenced types inlined) and its qualified decoded form.
func parseDoc(text, codecText string, doc any) (*Schema, error) {
	codec, err := goavro.NewCodec(codecText)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	p := &parser{named: map[string]*Type{}}
	root, err := p.parse(doc, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &Schema{Text: text, Canonical: codec.CanonicalSchema(), Root: root, codec: codec}, nil
}

type parser struct {
	named map[string]*Type
}

func (p *parser) parse(v any, ns string) (*Type, error) {
	switch v := v.(type) {
	case string:
		return p.reference(v, ns)
	case []any:
		t := &Type{Kind: Union}
		for _, b := range v {
			bt, err := p.parse(b, ns)
			if err != nil {
				return nil, err
			}
			t.Branches = append(t.Branches, bt)
		}
		return t, nil
	case map[string]any:
		return p.parseObject(v, ns)
	default:
		return nil, fmt.Errorf("unexpected JSON %T in schema", v)
	}
}

func (p *parser) reference(name, ns string) (*Type, error) {
	if k, ok := primitives[name]; ok {
		return &Type{Kind: k}, nil
	}
	if !strings.Contains(name, ".") && ns != "" {
		if t, ok := p.named[ns+"."+name]; ok {
			return t, nil
		}
	}
	if t, ok := p.named[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("unknown type %q", name)
}

func (p *parser) parseObject(m map[string]any, ns string) (*Type, error) {
	switch typ := m["type"].(type) {
	case map[string]any, []any:
		return p.parse(typ, ns)
	case string:
		logical, _ := m["logicalType"].(string)
		switch typ {
		case "record", "error":
			t, inner, err := p.define(m, Record, ns)
			if err != nil {
				return nil, err
			}
			fields, _ := m["fields"].([]any)
			for _, fv := range fields {
				fm, ok := fv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("record %s: field is not an object", t.Name)
				}
				f := &Field{}
				f.Name, _ = fm["name"].(string)
				for _, a := range stringList(fm["aliases"]) {
					f.Aliases = append(f.Aliases, a)
				}
				ft, err := p.parse(fm["type"], inner)
				if err != nil {
					return nil, fmt.Errorf("record %s field %s: %w", t.Name, f.Name, err)
				}
				f.Type = ft
				if d, ok := fm["default"]; ok {
					raw, err := json.Marshal(d)
					if err != nil {
						return nil, err
					}
					f.Default = raw
				}
				t.Fields = append(t.Fields, f)
			}
			return t, nil
		case "enum":
			t, _, err := p.define(m, Enum, ns)
			if err != nil {
				return nil, err
			}
			t.Symbols = stringList(m["symbols"])
			if d, ok := m["default"].(string); ok {
				t.EnumDefault, t.HasEnumDefault = d, true
			}
			return t, nil
		case "fixed":
			t, _, err := p.define(m, Fixed, ns)
			if err != nil {
				return nil, err
			}
			size, _ := m["size"].(json.Number)
			n, err := size.Int64()
			if err != nil {
				return nil, fmt.Errorf("fixed %s: size: %v", t.Name, err)
			}
			t.Size = int(n)
			t.LogicalType = logical
			return t, nil
		case "array":
			items, err := p.parse(m["items"], ns)
			if err != nil {
				return nil, err
			}
			return &Type{Kind: Array, Items: items, LogicalType: logical}, nil
		case "map":
			values, err := p.parse(m["values"], ns)
			if err != nil {
				return nil, err
			}
			return &Type{Kind: Map, Values: values, LogicalType: logical}, nil
		default:
			t, err := p.reference(typ, ns)
			if err != nil {
				return nil, err
			}
			if logical != "" && t.Name == "" {
				// A copy, so that "long" elsewhere is not marked logical.
				c := *t
				c.LogicalType = logical
				t = &c
			}
			return t, nil
		}
	default:
		return nil, fmt.Errorf("schema object without a type")
	}
}

// define registers a named type before its body is parsed, so that the
// body may refer to it (recursive records). It returns the namespace that
// encloses the type's children.
func (p *parser) define(m map[string]any, k Kind, ns string) (*Type, string, error) {
	name, _ := m["name"].(string)
	if name == "" {
		return nil, "", fmt.Errorf("%s without a name", k)
	}
	full, inner := NameOf(m, ns)
	t := &Type{Kind: k, Name: full}
	for _, a := range stringList(m["aliases"]) {
		t.Aliases = append(t.Aliases, FullName(a, inner))
	}
	p.named[full] = t
	return t, inner, nil
}

func shortName(full string) string {
	return full[strings.LastIndexByte(full, '.')+1:]
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// goavroLogical lists the logical types goavro decodes to their own Go
// types and names union branches after ("long.timestamp-millis").
var goavroLogical = map[string]bool{
	"long.timestamp-millis": true, "long.timestamp-micros": true,
	"int.time-millis": true, "long.time-micros": true, "int.date": true,
	"bytes.decimal": true, "fixed.decimal": true,
}

// branchName is the key goavro uses for a union value of type t.
func branchName(t *Type) string {
	switch t.Kind {
	case Record, Enum, Fixed:
		return t.Name
	}
	name := t.Kind.String()
	if t.LogicalType != "" && goavroLogical[name+"."+t.LogicalType] {
		return name + "." + t.LogicalType
	}
	return name
}

// describe names a type for messages.
func describe(t *Type) string {
	if t.Name != "" {
		return t.Kind.String() + " " + t.Name
	}
	return t.Kind.String()
}

// decodeJSON decodes raw keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
