package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// newServer serves a Registry over store through httptest.
func newServer(t *testing.T, store Store) *httptest.Server {
	t.Helper()
	reg, err := New(store, Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv
}

type apiResponse struct {
	status      int
	contentType string
	body        []byte
}

// json decodes the body; numbers become float64.
func (r apiResponse) json(t *testing.T) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
	return v
}

func call(t *testing.T, srv *httptest.Server, method, path string, body any, header ...string) apiResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", ContentTypeV1)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return apiResponse{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: raw}
}

// expect checks status and the decoded JSON body.
func expect(t *testing.T, r apiResponse, status int, want any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var w any
	raw, _ := json.Marshal(want)
	json.Unmarshal(raw, &w)
	if got := r.json(t); !reflect.DeepEqual(got, w) {
		t.Fatalf("body %s, want %s", r.body, raw)
	}
}

// expectError checks a Confluent error response.
func expectError(t *testing.T, r apiResponse, status, code int, msgPart string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	var e ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.ErrorCode != code {
		t.Fatalf("body %s, want error_code %d", r.body, code)
	}
	if !strings.Contains(e.Message, msgPart) {
		t.Fatalf("message %q does not mention %q", e.Message, msgPart)
	}
}

const (
	userV1 = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"id","type":"long"}]}`
	// userV1b is userV1 in another spelling: same canonical form.
	userV1b = `{"namespace":"ex", "name":"User", "type":"record", "doc":"users", "fields":[{"type":"long","name":"id"}]}`
	userV2  = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"id","type":"long"},{"name":"email","type":"string","default":""}]}`
	// userBad adds a field without default: not BACKWARD compatible.
	userBad = `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"id","type":"long"},{"name":"age","type":"int"}]}`
)

func schemaBody(s string) map[string]any { return map[string]any{"schema": s} }

func TestREST(t *testing.T) {
	forEachStore(t, testREST)
}

func testREST(t *testing.T, store Store) {
	srv := newServer(t, store)

	// Root, types.
	expect(t, call(t, srv, "GET", "/", nil), 200, map[string]any{})
	expect(t, call(t, srv, "GET", "/schemas/types", nil), 200, []string{"AVRO"})
	expect(t, call(t, srv, "GET", "/subjects", nil), 200, []string{})

	// Register, idempotent by canonical form, ids global across subjects.
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV1)), 200, map[string]int{"id": 1})
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV1b)), 200, map[string]int{"id": 1})
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", map[string]any{"schema": userV2, "schemaType": "AVRO"}), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "POST", "/subjects/copy%2Fvalue/versions", schemaBody(userV2)), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "GET", "/subjects", nil), 200, []string{"copy/value", "users-value"})
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions", nil), 200, []int{1, 2})

	// Versions by number, latest and -1; raw schema.
	v1 := map[string]any{"subject": "users-value", "version": 1, "id": 1, "schema": userV1}
	v2 := map[string]any{"subject": "users-value", "version": 2, "id": 2, "schema": userV2}
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/1", nil), 200, v1)
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/latest", nil), 200, v2)
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/-1", nil), 200, v2)
	if r := call(t, srv, "GET", "/subjects/users-value/versions/1/schema", nil); r.status != 200 || string(r.body) != userV1 {
		t.Fatalf("raw version schema: %d %s", r.status, r.body)
	}
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/1/referencedby", nil), 200, []int{})

	// By id.
	expect(t, call(t, srv, "GET", "/schemas/ids/2", nil), 200, map[string]any{"schema": userV2})
	if r := call(t, srv, "GET", "/schemas/ids/1/schema", nil); r.status != 200 || string(r.body) != userV1 {
		t.Fatalf("raw schema by id: %d %s", r.status, r.body)
	}
	expect(t, call(t, srv, "GET", "/schemas/ids/2/versions", nil), 200,
		[]map[string]any{{"subject": "copy/value", "version": 1}, {"subject": "users-value", "version": 2}})
	expect(t, call(t, srv, "GET", "/schemas/ids/2/subjects", nil), 200, []string{"copy/value", "users-value"})

	// Lookup.
	expect(t, call(t, srv, "POST", "/subjects/users-value", schemaBody(userV1b)), 200, v1)
	expectError(t, call(t, srv, "POST", "/subjects/users-value", schemaBody(`"string"`)), 404, 40403, "not registered")
	expectError(t, call(t, srv, "POST", "/subjects/nobody", schemaBody(userV1)), 404, 40401, "subject not found")

	// Errors: 409, 42201, 42202, 40401, 40402, 40403.
	expectError(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userBad)), 409, 409, `"age"`)
	expectError(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(`{"type":"recrd"}`)), 422, 42201, "invalid schema")
	expectError(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(``)), 422, 42201, "empty schema")
	expectError(t, call(t, srv, "POST", "/subjects/p/versions", map[string]any{"schema": "syntax = \"proto3\";", "schemaType": "PROTOBUF"}), 422, 42201, "only AVRO")
	expectError(t, call(t, srv, "POST", "/subjects/p/versions", map[string]any{"schema": userV1, "references": []any{map[string]any{"name": "x", "subject": "y", "version": 1}}}), 422, 42201, "reference x")
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions/abc", nil), 422, 42202, "invalid version")
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions/0", nil), 422, 42202, "invalid version")
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions/9", nil), 404, 40402, "version not found")
	expectError(t, call(t, srv, "GET", "/subjects/nobody/versions/1", nil), 404, 40401, "subject not found")
	expectError(t, call(t, srv, "GET", "/subjects/nobody/versions", nil), 404, 40401, "subject not found")
	expectError(t, call(t, srv, "GET", "/schemas/ids/99", nil), 404, 40403, "schema not found")
	expectError(t, call(t, srv, "GET", "/schemas/ids/99/schema", nil), 404, 40403, "schema not found")
	expectError(t, call(t, srv, "GET", "/schemas/ids/99/versions", nil), 404, 40403, "schema not found")
	expectError(t, call(t, srv, "GET", "/schemas/ids/x", nil), 404, 40403, "schema not found")

	// Compatibility endpoint.
	expect(t, call(t, srv, "POST", "/compatibility/subjects/users-value/versions/latest", schemaBody(userV2)), 200, map[string]any{"is_compatible": true})
	expect(t, call(t, srv, "POST", "/compatibility/subjects/users-value/versions/1", schemaBody(userV2)), 200, map[string]any{"is_compatible": true})
	expect(t, call(t, srv, "POST", "/compatibility/subjects/users-value/versions/latest", schemaBody(userBad)), 200, map[string]any{"is_compatible": false})
	r := call(t, srv, "POST", "/compatibility/subjects/users-value/versions/latest?verbose=true", schemaBody(userBad))
	if m := r.json(t).(map[string]any); m["is_compatible"] != false || !strings.Contains(r.String(), `\"age\" is missing`) {
		t.Fatalf("verbose compatibility: %s", r.body)
	}
	expect(t, call(t, srv, "POST", "/compatibility/subjects/brand-new/versions/latest", schemaBody(userBad)), 200, map[string]any{"is_compatible": true})
	expectError(t, call(t, srv, "POST", "/compatibility/subjects/users-value/versions/7", schemaBody(userV2)), 404, 40402, "Version 7 not found.")
	expectError(t, call(t, srv, "POST", "/compatibility/subjects/brand-new/versions/1", schemaBody(userV2)), 404, 40402, "Version 1 not found.")
	expectError(t, call(t, srv, "POST", "/compatibility/subjects/users-value/versions/latest", schemaBody(`nope`)), 422, 42201, "invalid schema")

	// Config.
	expect(t, call(t, srv, "GET", "/config", nil), 200, map[string]any{"compatibilityLevel": "BACKWARD"})
	expect(t, call(t, srv, "PUT", "/config", map[string]any{"compatibility": "FULL"}), 200, map[string]any{"compatibility": "FULL"})
	expect(t, call(t, srv, "GET", "/config", nil), 200, map[string]any{"compatibilityLevel": "FULL"})
	expectError(t, call(t, srv, "PUT", "/config", map[string]any{"compatibility": "SIDEWAYS"}), 422, 42203, "SIDEWAYS")
	expectError(t, call(t, srv, "GET", "/config/users-value", nil), 404, 40408, "not configured")
	expect(t, call(t, srv, "GET", "/config/users-value?defaultToGlobal=true", nil), 200, map[string]any{"compatibilityLevel": "FULL"})
	expect(t, call(t, srv, "PUT", "/config/users-value", map[string]any{"compatibility": "none"}), 200, map[string]any{"compatibility": "NONE"})
	expect(t, call(t, srv, "GET", "/config/users-value", nil), 200, map[string]any{"compatibilityLevel": "NONE"})
	// NONE lets the incompatible schema in.
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userBad)), 200, map[string]int{"id": 3})
	expect(t, call(t, srv, "DELETE", "/config/users-value", nil), 200, map[string]any{"compatibilityLevel": "NONE"})
	expectError(t, call(t, srv, "DELETE", "/config/users-value", nil), 404, 40408, "not configured")

	// Deletes: soft, then permanent, each with its error codes.
	expect(t, call(t, srv, "DELETE", "/subjects/users-value/versions/1", nil), 200, 1)
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions/1", nil), 404, 40402, "version not found")
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions/1?deleted=true", nil), 200, v1)
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions", nil), 200, []int{2, 3})
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions?deleted=true", nil), 200, []int{1, 2, 3})
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value/versions/1", nil), 404, 40406, "soft deleted")
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value/versions/2?permanent=true", nil), 404, 40407, "must be soft deleted")
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value?permanent=true", nil), 404, 40405, "must be soft deleted")
	expect(t, call(t, srv, "DELETE", "/subjects/users-value/versions/1?permanent=true", nil), 200, 1)
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions?deleted=true", nil), 200, []int{2, 3})
	expect(t, call(t, srv, "DELETE", "/subjects/users-value", nil), 200, []int{2, 3})
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value", nil), 404, 40404, "soft deleted")
	expect(t, call(t, srv, "GET", "/subjects", nil), 200, []string{"copy/value"})
	expect(t, call(t, srv, "GET", "/subjects?deleted=true", nil), 200, []string{"copy/value", "users-value"})
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions/latest", nil), 404, 40401, "subject not found")
	expect(t, call(t, srv, "GET", "/schemas/ids/2/versions", nil), 200, []map[string]any{{"subject": "copy/value", "version": 1}})
	expect(t, call(t, srv, "GET", "/schemas/ids/2/versions?deleted=true", nil), 200,
		[]map[string]any{{"subject": "copy/value", "version": 1}, {"subject": "users-value", "version": 2}})
	// Re-registering a soft-deleted schema makes a new version with the old id.
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV2)), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "GET", "/subjects/users-value/versions", nil), 200, []int{4})
	expect(t, call(t, srv, "DELETE", "/subjects/users-value/versions/latest", nil), 200, 4)
	expect(t, call(t, srv, "DELETE", "/subjects/users-value?permanent=true", nil), 200, []int{2, 3, 4})
	expectError(t, call(t, srv, "GET", "/subjects/users-value/versions?deleted=true", nil), 404, 40401, "subject not found")
	expectError(t, call(t, srv, "DELETE", "/subjects/users-value", nil), 404, 40401, "subject not found")
	// Schemas outlive their versions: old data stays decodable.
	expect(t, call(t, srv, "GET", "/schemas/ids/1", nil), 200, map[string]any{"schema": userV1})
}

func (r apiResponse) String() string { return string(r.body) }

// TestCompatibilityMissingSubject: what Confluent Schema Registry 7.x
// answers a compatibility check against a subject without live versions
// (its CompatibilityResource, and RestApiTest.testCompatibilityNonExistentSubject;
// 5.x answered 40401, changed on purpose): "latest" and the all-versions
// form of 7.x are compatible, verbose or not (nothing to break); a
// numbered version is 404 40402 "Version N not found."; a schema that
// does not parse is still refused (42201), or reported under verbose.
func TestCompatibilityMissingSubject(t *testing.T) {
	forEachStore(t, func(t *testing.T, store Store) {
		srv := newServer(t, store)
		// gone-value had versions; all are soft-deleted.
		expect(t, call(t, srv, "POST", "/subjects/gone-value/versions", schemaBody(userV1)), 200, map[string]int{"id": 1})
		expect(t, call(t, srv, "DELETE", "/subjects/gone-value", nil), 200, []int{1})
		for _, subject := range []string{"brand-new", "gone-value"} {
			base := "/compatibility/subjects/" + subject + "/versions"
			for _, path := range []string{base + "/latest", base + "/-1", base, base + "/latest?verbose=false", base + "?verbose=False"} {
				expect(t, call(t, srv, "POST", path, schemaBody(userBad)), 200, map[string]any{"is_compatible": true})
			}
			for _, path := range []string{base + "/latest?verbose=true", base + "?verbose=True"} {
				expect(t, call(t, srv, "POST", path, schemaBody(userBad)), 200, map[string]any{"is_compatible": true})
			}
			for _, path := range []string{base + "/1", base + "/1?verbose=true"} {
				r := call(t, srv, "POST", path, schemaBody(userV1))
				expect(t, r, 404, map[string]any{"error_code": 40402, "message": "Version 1 not found."})
			}
			for _, path := range []string{base + "/latest", base} {
				expectError(t, call(t, srv, "POST", path, schemaBody(`{"type":"recrd"}`)), 422, 42201, "invalid schema")
				r := call(t, srv, "POST", path+"?verbose=true", schemaBody(`{"type":"recrd"}`))
				m, _ := r.json(t).(map[string]any)
				if msgs, _ := m["messages"].([]any); r.status != 200 || m["is_compatible"] != false || len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]), "invalid schema") {
					t.Fatalf("POST %s?verbose=true, an invalid schema: HTTP %d %s; want 200, not compatible, the parse error", path, r.status, r.body)
				}
			}
		}
	})
}

// TestCompatibilityLatestAndAll: .../versions/latest checks against the
// newest live version alone (Confluent 7.x passes that one version to its
// checker, whatever the level), .../versions against what the level
// names, as a registration does. Under BACKWARD_TRANSITIVE a schema that
// reads the newest version's data but not the first's is compatible with
// latest and not with all.
func TestCompatibilityLatestAndAll(t *testing.T) {
	srv := newServer(t, newMemStore(t))
	expect(t, call(t, srv, "PUT", "/config/u", map[string]any{"compatibility": "BACKWARD_TRANSITIVE"}), 200, map[string]any{"compatibility": "BACKWARD_TRANSITIVE"})
	expect(t, call(t, srv, "POST", "/subjects/u/versions", schemaBody(userV1)), 200, map[string]int{"id": 1})
	expect(t, call(t, srv, "POST", "/subjects/u/versions", schemaBody(userV2)), 200, map[string]int{"id": 2})
	// email without a default: reads version 2's data, not version 1's.
	v3 := `{"type":"record","name":"User","namespace":"ex","fields":[{"name":"id","type":"long"},{"name":"email","type":"string"}]}`
	expect(t, call(t, srv, "POST", "/compatibility/subjects/u/versions/latest", schemaBody(v3)), 200, map[string]any{"is_compatible": true})
	expect(t, call(t, srv, "POST", "/compatibility/subjects/u/versions/2", schemaBody(v3)), 200, map[string]any{"is_compatible": true})
	expect(t, call(t, srv, "POST", "/compatibility/subjects/u/versions/1", schemaBody(v3)), 200, map[string]any{"is_compatible": false})
	r := call(t, srv, "POST", "/compatibility/subjects/u/versions?verbose=true", schemaBody(v3))
	m, _ := r.json(t).(map[string]any)
	if msgs, _ := m["messages"].([]any); r.status != 200 || m["is_compatible"] != false || len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]), "version 1") {
		t.Fatalf("all versions, verbose: HTTP %d %s; want not compatible, with version 1's problem", r.status, r.body)
	}
}

func TestRESTContentTypes(t *testing.T) {
	srv := newServer(t, newMemStore(t))
	for _, ct := range []string{ContentTypeV1, ContentTypeDefault, ContentTypeJSON, ContentTypeJSON + "; charset=utf-8", ""} {
		r := call(t, srv, "POST", "/subjects/s/versions", schemaBody(userV1), "Content-Type", ct)
		expect(t, r, 200, map[string]int{"id": 1})
		if r.contentType != ContentTypeV1 {
			t.Fatalf("response content type %q", r.contentType)
		}
	}
	expectError(t, call(t, srv, "POST", "/subjects/s/versions", schemaBody(userV1), "Content-Type", "text/plain"), 415, 415, "Unsupported Media Type")
	for _, accept := range []string{ContentTypeJSON, ContentTypeDefault, "application/json, */*"} {
		r := call(t, srv, "GET", "/subjects", nil, "Accept", accept)
		if want, _, _ := strings.Cut(accept, ","); r.contentType != want {
			t.Fatalf("Accept %q answered with %q", accept, r.contentType)
		}
	}
	expectError(t, call(t, srv, "POST", "/subjects/s/versions", `{"schema": `), 400, 400, "malformed JSON")
	expectError(t, call(t, srv, "GET", "/no/such/endpoint", nil), 404, 404, "Not Found")
}

// failingStore fails every subject read, as a lost coordination service would.
type failingStore struct{ *MemStore }

func (failingStore) Versions(context.Context, string) ([]VersionRecord, error) {
	return nil, errors.New("connection refused")
}

func TestRESTStoreError(t *testing.T) {
	srv := newServer(t, failingStore{newMemStore(t)})
	expectError(t, call(t, srv, "GET", "/subjects/s/versions", nil), 500, 50001, "connection refused")
	expectError(t, call(t, srv, "POST", "/subjects/s/versions", schemaBody(userV1)), 500, 50001, "connection refused")
}

func TestErrorCodeTable(t *testing.T) {
	for _, e := range apiErrors {
		wrapped := errors.Join(errors.New("context"), e.err)
		if code, status := ErrorCode(wrapped); code != e.code || status != e.status {
			t.Errorf("%v: code %d status %d, want %d %d", e.err, code, status, e.code, e.status)
		}
	}
	if code, status := ErrorCode(errors.New("anything")); code != 50001 || status != 500 {
		t.Errorf("unclassified: %d %d", code, status)
	}
}
