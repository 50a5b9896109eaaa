package avro

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t testing.TB, text string) *Schema {
	t.Helper()
	s, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return s
}

func rec(fields string) string {
	return `{"type":"record","name":"R","namespace":"ns","fields":[` + fields + `]}`
}

// TestCheckRules is the rule matrix: each row is one reader/writer pair and
// whether the reader can read the writer's data, with the problem it must
// name when not.
func TestCheckRules(t *testing.T) {
	cases := []struct {
		name           string
		reader, writer string
		ok             bool
		problem        string
	}{
		{"same primitive", `"int"`, `"int"`, true, ""},
		{"int to long", `"long"`, `"int"`, true, ""},
		{"int to float", `"float"`, `"int"`, true, ""},
		{"int to double", `"double"`, `"int"`, true, ""},
		{"long to float", `"float"`, `"long"`, true, ""},
		{"long to double", `"double"`, `"long"`, true, ""},
		{"float to double", `"double"`, `"float"`, true, ""},
		{"string to bytes", `"bytes"`, `"string"`, true, ""},
		{"bytes to string", `"string"`, `"bytes"`, true, ""},
		{"long to int narrows", `"int"`, `"long"`, false, "cannot read writer type long"},
		{"double to float narrows", `"float"`, `"double"`, false, "cannot read writer type double"},
		{"string to int", `"int"`, `"string"`, false, "cannot read"},
		{"boolean to null", `"null"`, `"boolean"`, false, "cannot read"},

		{"field added with default", rec(`{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}`), rec(`{"name":"a","type":"int"}`), true, ""},
		{"field added with null default", rec(`{"name":"a","type":"int"},{"name":"b","type":["null","string"],"default":null}`), rec(`{"name":"a","type":"int"}`), true, ""},
		{"field added without default", rec(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), rec(`{"name":"a","type":"int"}`), false, `field "b" is missing from the writer and has no default`},
		{"field removed", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), true, ""},
		{"field promoted", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"int"}`), true, ""},
		{"field narrowed", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"long"}`), false, "/a/"},
		{"field renamed with alias", rec(`{"name":"b","aliases":["a"],"type":"int"}`), rec(`{"name":"a","type":"int"}`), true, ""},
		{"record renamed", `{"type":"record","name":"S","fields":[]}`, `{"type":"record","name":"R","fields":[]}`, false, "does not match writer record"},
		{"record renamed with alias", `{"type":"record","name":"S","aliases":["R"],"fields":[]}`, `{"type":"record","name":"R","fields":[]}`, true, ""},
		{"record namespace differs", `{"type":"record","name":"R","namespace":"a","fields":[]}`, `{"type":"record","name":"R","namespace":"b","fields":[]}`, true, ""},

		{"enum symbol added", `{"type":"enum","name":"E","symbols":["A","B","C"]}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, true, ""},
		{"enum symbol removed", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, false, `symbol "B"`},
		{"enum symbol removed with reader default", `{"type":"enum","name":"E","symbols":["A","U"],"default":"U"}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, true, ""},
		{"enum renamed", `{"type":"enum","name":"F","symbols":["A"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, false, "does not match"},

		{"union branch added", `["null","int","string"]`, `["null","int"]`, true, ""},
		{"union branch removed", `["null","int"]`, `["null","int","string"]`, false, "no branch for writer union branch 2 (string)"},
		{"union branch promoted", `["null","long"]`, `["null","int"]`, true, ""},
		{"non-union writer into union", `["null","string"]`, `"string"`, true, ""},
		{"non-union writer promoted into union", `["null","double"]`, `"int"`, true, ""},
		{"non-union writer no branch", `["null","string"]`, `"int"`, false, "no branch for writer type int"},
		{"union writer into non-union all match", `"long"`, `["int","long"]`, true, ""},
		{"union writer into non-union one fails", `"long"`, `["null","long"]`, false, "cannot read writer type null"},

		{"array items promoted", `{"type":"array","items":"long"}`, `{"type":"array","items":"int"}`, true, ""},
		{"array items narrowed", `{"type":"array","items":"int"}`, `{"type":"array","items":"long"}`, false, "items"},
		{"map values promoted", `{"type":"map","values":"double"}`, `{"type":"map","values":"float"}`, true, ""},
		{"map values incompatible", `{"type":"map","values":"int"}`, `{"type":"map","values":"string"}`, false, "values"},
		{"array vs map", `{"type":"map","values":"int"}`, `{"type":"array","items":"int"}`, false, "cannot read"},

		{"fixed same", `{"type":"fixed","name":"F","size":16}`, `{"type":"fixed","name":"F","size":16}`, true, ""},
		{"fixed size differs", `{"type":"fixed","name":"F","size":8}`, `{"type":"fixed","name":"F","size":16}`, false, "size 8 cannot read size 16"},
		{"fixed name differs", `{"type":"fixed","name":"G","size":16}`, `{"type":"fixed","name":"F","size":16}`, false, "does not match"},

		{"nested record field added with default",
			rec(`{"name":"in","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"},{"name":"y","type":"int","default":0}]}}`),
			rec(`{"name":"in","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}}`), true, ""},
		{"nested record field added without default",
			rec(`{"name":"in","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}}`),
			rec(`{"name":"in","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}}`), false, "/in/y/"},
		{"named type reference reused",
			rec(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X","Y"]}},{"name":"b","type":"E"}`),
			rec(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X"]}},{"name":"b","type":"E"}`), true, ""},
		{"named type reference shrinks",
			rec(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X"]}},{"name":"b","type":"ns.E"}`),
			rec(`{"name":"a","type":{"type":"enum","name":"E","symbols":["X","Y"]}},{"name":"b","type":"E"}`), false, `symbol "Y"`},
		{"recursive list compatible",
			`{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"],"default":null}]}`,
			`{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}`, true, ""},
		{"recursive list incompatible",
			`{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}`,
			`{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]}]}`, false, "/v/"},
		{"logical type by underlying type", `{"type":"long","logicalType":"timestamp-millis"}`, `"int"`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, w := mustParse(t, tc.reader), mustParse(t, tc.writer)
			problems := Check(r, w)
			if (len(problems) == 0) != tc.ok {
				t.Fatalf("Check = %q, want compatible=%v", problems, tc.ok)
			}
			if !tc.ok && !strings.Contains(strings.Join(problems, "\n"), tc.problem) {
				t.Fatalf("problems %q do not mention %q", problems, tc.problem)
			}
			err := Compatible(r, w)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrIncompatible)) {
				t.Fatalf("Compatible = %v", err)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	for _, text := range []string{``, `{`, `"nosuchtype"`, `{"type":"record","fields":[]}`, `{"type":"enum","name":"E","symbols":[1]}`} {
		if _, err := Parse(text); !errors.Is(err, ErrInvalidSchema) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalidSchema", text, err)
		}
	}
}

func TestCanonicalAndFingerprint(t *testing.T) {
	a := mustParse(t, `{"type":"record","name":"R","namespace":"n","doc":"x","fields":[{"name":"a","type":"int","default":1}]}`)
	b := mustParse(t, `{"fields":[{"type":"int","name":"a"}],"name":"n.R","type":"record"}`)
	if a.Canonical != b.Canonical || a.Fingerprint() != b.Fingerprint() {
		t.Fatalf("canonical forms differ: %s vs %s", a.Canonical, b.Canonical)
	}
	if a.Canonical != `{"name":"n.R","type":"record","fields":[{"name":"a","type":"int"}]}` {
		t.Fatalf("canonical = %s", a.Canonical)
	}
	c := mustParse(t, `{"type":"record","name":"n.R","fields":[{"name":"a","type":"long"}]}`)
	if c.Fingerprint() == a.Fingerprint() {
		t.Fatal("different schemas share a fingerprint")
	}
}
