package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

func TestStoreModes(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		for _, subj := range []string{"", "a/b"} {
			if _, err := s.Mode(ctx, subj); !errors.Is(err, ErrModeNotFound) {
				t.Fatalf("Mode(%q) unset: %v", subj, err)
			}
			if err := s.DeleteMode(ctx, subj); !errors.Is(err, ErrModeNotFound) {
				t.Fatalf("DeleteMode(%q) unset: %v", subj, err)
			}
		}
		must(t, s.SetMode(ctx, "", ReadOnly))
		must(t, s.SetMode(ctx, "a/b", Import))
		must(t, s.SetMode(ctx, "a/b", ReadWrite))
		if m, err := s.Mode(ctx, ""); m != ReadOnly || err != nil {
			t.Fatalf("global = %q, %v", m, err)
		}
		if m, err := s.Mode(ctx, "a/b"); m != ReadWrite || err != nil {
			t.Fatalf("a/b = %q, %v", m, err)
		}
		must(t, s.DeleteMode(ctx, "a/b"))
		must(t, s.DeleteMode(ctx, ""))
		for _, subj := range []string{"", "a/b"} {
			if _, err := s.Mode(ctx, subj); !errors.Is(err, ErrModeNotFound) {
				t.Fatalf("Mode(%q) after delete: %v", subj, err)
			}
		}
		// Modes and levels are separate settings.
		if _, err := s.Compatibility(ctx, ""); !errors.Is(err, ErrConfigNotFound) {
			t.Fatalf("level set by a mode: %v", err)
		}
	})
}

func TestStoreImportSchema(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := testenv.Context(t, 30*time.Second)
		refs := []Reference{{Name: "x.A", Subject: "a", Version: 1}}
		must(t, s.ImportSchema(ctx, SchemaRecord{ID: 5, Schema: `"int"`, Type: "AVRO", Fingerprint: "fp5", References: refs}))
		must(t, s.ImportSchema(ctx, SchemaRecord{ID: 5, Schema: `"int"`, Type: "AVRO", Fingerprint: "fp5", References: refs}))
		if err := s.ImportSchema(ctx, SchemaRecord{ID: 5, Schema: `"long"`, Type: "AVRO", Fingerprint: "other"}); !errors.Is(err, ErrIDTaken) {
			t.Fatalf("import over another schema: %v, want ErrIDTaken", err)
		}
		rec, err := s.Schema(ctx, 5)
		if err != nil || rec.Schema != `"int"` || len(rec.References) != 1 || rec.References[0] != refs[0] {
			t.Fatalf("Schema(5) = %+v, %v", rec, err)
		}
		// The imported fingerprint keeps its id; new schemas never get it.
		if id, err := s.PutSchema(ctx, SchemaRecord{Schema: `"int"`, Type: "AVRO", Fingerprint: "fp5"}); id != 5 || err != nil {
			t.Fatalf("PutSchema of the imported schema = %d, %v", id, err)
		}
		seen := map[int]bool{5: true}
		for i := range 7 {
			id, err := s.PutSchema(ctx, SchemaRecord{Schema: `"string"`, Type: "AVRO", Fingerprint: "new" + string(rune('a'+i))})
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("PutSchema handed out id %d twice", id)
			}
			seen[id] = true
		}
	})
}

func TestRESTModes(t *testing.T) {
	forEachStore(t, testRESTModes)
}

func testRESTModes(t *testing.T, store Store) {
	srv := newServer(t, store)
	expect(t, call(t, srv, "GET", "/mode", nil), 200, map[string]any{"mode": "READWRITE"})
	expectError(t, call(t, srv, "GET", "/mode/users-value", nil), 404, 40409, "not configured")
	expect(t, call(t, srv, "GET", "/mode/users-value?defaultToGlobal=true", nil), 200, map[string]any{"mode": "READWRITE"})
	expectError(t, call(t, srv, "PUT", "/mode", map[string]any{"mode": "SIDEWAYS"}), 422, 42204, "SIDEWAYS")
	expectError(t, call(t, srv, "DELETE", "/mode/users-value", nil), 404, 40409, "not configured")

	// An id in the body needs IMPORT.
	expectError(t, call(t, srv, "POST", "/subjects/users-value/versions", map[string]any{"schema": userV1, "id": 7}), 422, 42205, "not in import mode")
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV1)), 200, map[string]int{"id": 1})

	// READONLY refuses registrations and deletes, reads go on.
	expect(t, call(t, srv, "PUT", "/mode/users-value", map[string]any{"mode": "readonly"}), 200, map[string]any{"mode": "READONLY"})
	expect(t, call(t, srv, "GET", "/mode/users-value", nil), 200, map[string]any{"mode": "READONLY"})
	expectError(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV2)), 422, 42205, "Subject users-value is in read-only mode")
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value/versions/1", nil), 422, 42205, "read-only mode")
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/latest", nil), 200,
		map[string]any{"subject": "users-value", "version": 1, "id": 1, "schema": userV1})
	// Other subjects follow the global mode.
	expect(t, call(t, srv, "POST", "/subjects/other/versions", schemaBody(`"int"`)), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "DELETE", "/mode/users-value", nil), 200, map[string]any{"mode": "READONLY"})
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV2)), 200, map[string]int{"id": 3})
	expect(t, call(t, srv, "PUT", "/mode", map[string]any{"mode": "READONLY"}), 200, map[string]any{"mode": "READONLY"})
	expectError(t, call(t, srv, "POST", "/subjects/brand-new/versions", schemaBody(`"int"`)), 422, 42205, "read-only")
	expect(t, call(t, srv, "PUT", "/mode", map[string]any{"mode": "READWRITE"}), 200, map[string]any{"mode": "READWRITE"})

	// IMPORT only on an empty subject unless forced.
	expectError(t, call(t, srv, "PUT", "/mode/users-value", map[string]any{"mode": "IMPORT"}), 422, 42205, "Cannot import")
	expectError(t, call(t, srv, "PUT", "/mode", map[string]any{"mode": "IMPORT"}), 422, 42205, "Cannot import")
	expect(t, call(t, srv, "PUT", "/mode/copied", map[string]any{"mode": "IMPORT"}), 200, map[string]any{"mode": "IMPORT"})
	expectError(t, call(t, srv, "POST", "/subjects/copied/versions", schemaBody(`"string"`)), 422, 42205, "must name its id")
	expect(t, call(t, srv, "POST", "/subjects/copied/versions", map[string]any{"schema": `"string"`, "id": 100, "version": 3}), 200, map[string]int{"id": 100})
	// Idempotent; the same schema under another id is refused; an id
	// holding another schema cannot be overwritten.
	expect(t, call(t, srv, "POST", "/subjects/copied/versions", map[string]any{"schema": `"string"`, "id": 100}), 200, map[string]int{"id": 100})
	expectError(t, call(t, srv, "POST", "/subjects/copied/versions", map[string]any{"schema": `"string"`, "id": 101}), 422, 42207, "instead of input id 101")
	expectError(t, call(t, srv, "POST", "/subjects/copied/versions", map[string]any{"schema": `"bytes"`, "id": 1}), 422, 42205, "Overwrite new schema with id 1")
	// Imports skip compatibility checks.
	expect(t, call(t, srv, "POST", "/subjects/copied/versions", map[string]any{"schema": userBad, "id": 50}), 200, map[string]int{"id": 50})
	expect(t, call(t, srv, "GET", "/subjects/copied/versions", nil), 200, []int{3, 4})
	expect(t, call(t, srv, "GET", "/subjects/copied/versions/3", nil), 200,
		map[string]any{"subject": "copied", "version": 3, "id": 100, "schema": `"string"`})
	expect(t, call(t, srv, "PUT", "/mode/users-value?force=true", map[string]any{"mode": "IMPORT"}), 200, map[string]any{"mode": "IMPORT"})
	expect(t, call(t, srv, "DELETE", "/mode/users-value", nil), 200, map[string]any{"mode": "IMPORT"})

	// Back in READWRITE, new ids never collide with imported ones.
	expect(t, call(t, srv, "DELETE", "/mode/copied", nil), 200, map[string]any{"mode": "IMPORT"})
	r := call(t, srv, "POST", "/subjects/fresh/versions", schemaBody(`"float"`))
	id := int(r.json(t).(map[string]any)["id"].(float64))
	if r.status != 200 || id <= 100 {
		t.Fatalf("fresh schema after an import of id 100: %d %s", r.status, r.body)
	}
	expect(t, call(t, srv, "GET", "/schemas/ids/100", nil), 200, map[string]any{"schema": `"string"`})
	expect(t, call(t, srv, "GET", "/schemas/ids/50", nil), 200, map[string]any{"schema": userBad})
}
