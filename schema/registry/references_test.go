package registry

import (
	"testing"
)

const (
	addressSchema = `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"street","type":"string"}]}`
	// addressV2 adds a field with a default: BACKWARD compatible.
	addressV2     = `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"street","type":"string"},{"name":"zip","type":"string","default":""}]}`
	customerV1    = `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"name","type":"string"},{"name":"home","type":"Address"}]}`
	customerV1Alt = `{"fields":[{"type":"string","name":"name"},{"name":"home","type":"com.acme.Address"}],"type":"record","name":"com.acme.Customer"}`
	// customerBad adds a field without default: not BACKWARD compatible.
	customerBad = `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"name","type":"string"},{"name":"home","type":"Address"},{"name":"age","type":"int"}]}`
)

func refsBody(schema string, refs ...map[string]any) map[string]any {
	list := make([]any, len(refs))
	for i, r := range refs {
		list[i] = r
	}
	return map[string]any{"schema": schema, "references": list}
}

func addressRef(version int) map[string]any {
	return map[string]any{"name": "com.acme.Address", "subject": "address-value", "version": version}
}

func TestRESTReferences(t *testing.T) {
	forEachStore(t, testRESTReferences)
}

func testRESTReferences(t *testing.T, store Store) {
	srv := newServer(t, store)
	expect(t, call(t, srv, "POST", "/subjects/address-value/versions", schemaBody(addressSchema)), 200, map[string]int{"id": 1})

	// Without the reference the schema does not parse.
	expectError(t, call(t, srv, "POST", "/subjects/customer-value/versions", schemaBody(customerV1)), 422, 42201, "invalid schema")
	expectError(t, call(t, srv, "POST", "/subjects/customer-value/versions", refsBody(customerV1, map[string]any{"name": "com.acme.Address", "subject": "address-value", "version": 7})), 422, 42201, "version not found")

	expect(t, call(t, srv, "POST", "/subjects/customer-value/versions", refsBody(customerV1, addressRef(1))), 200, map[string]int{"id": 2})
	// Same canonical form and references: same id.
	expect(t, call(t, srv, "POST", "/subjects/customer-value/versions", refsBody(customerV1Alt, addressRef(1))), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "POST", "/subjects/customer-value", refsBody(customerV1Alt, addressRef(1))), 200,
		map[string]any{"subject": "customer-value", "version": 1, "id": 2, "schema": customerV1, "references": []any{addressRef(1)}})

	// Responses carry the references.
	wantRefs := []any{addressRef(1)}
	expect(t, call(t, srv, "GET", "/subjects/customer-value/versions/1", nil), 200,
		map[string]any{"subject": "customer-value", "version": 1, "id": 2, "schema": customerV1, "references": wantRefs})
	expect(t, call(t, srv, "GET", "/schemas/ids/2", nil), 200, map[string]any{"schema": customerV1, "references": wantRefs})
	expect(t, call(t, srv, "GET", "/schemas/ids/2?subject=customer-value", nil), 200, map[string]any{"schema": customerV1, "references": wantRefs})
	if r := call(t, srv, "GET", "/schemas/ids/2/schema?subject=customer-value", nil); r.status != 200 || string(r.body) != customerV1 {
		t.Fatalf("raw schema by id: %d %s", r.status, r.body)
	}
	expect(t, call(t, srv, "GET", "/subjects/address-value/versions/1/referencedby", nil), 200, []int{2})
	expect(t, call(t, srv, "GET", "/subjects/address-value/versions/latest/referencedby", nil), 200, []int{2})
	expectError(t, call(t, srv, "GET", "/subjects/address-value/versions/9/referencedby", nil), 404, 40402, "version not found")

	// Compatibility is checked on the resolved types.
	expect(t, call(t, srv, "POST", "/compatibility/subjects/customer-value/versions/latest", refsBody(customerBad, addressRef(1))), 200, map[string]any{"is_compatible": false})
	expectError(t, call(t, srv, "POST", "/subjects/customer-value/versions", refsBody(customerBad, addressRef(1))), 409, 409, `"age"`)

	// A second version of Address; Customer on it is another schema (id 4),
	// and "latest" (-1) in a reference is stored as the number it meant.
	expect(t, call(t, srv, "POST", "/subjects/address-value/versions", schemaBody(addressV2)), 200, map[string]int{"id": 3})
	expect(t, call(t, srv, "POST", "/subjects/customer-value/versions", refsBody(customerV1, addressRef(-1))), 200, map[string]int{"id": 4})
	expect(t, call(t, srv, "GET", "/schemas/ids/4", nil), 200, map[string]any{"schema": customerV1, "references": []any{addressRef(2)}})
	expect(t, call(t, srv, "GET", "/subjects/address-value/versions/2/referencedby", nil), 200, []int{4})

	// Referenced versions cannot be deleted, soft or permanently, alone or
	// with their subject.
	expectError(t, call(t, srv, "DELETE", "/subjects/address-value/versions/1", nil), 422, 42206, "one or more references exist to the schema {subject=address-value,version=1}")
	expectError(t, call(t, srv, "DELETE", "/subjects/address-value", nil), 422, 42206, "references exist")
	// Once the referring versions are gone for good, the delete goes through.
	expect(t, call(t, srv, "DELETE", "/subjects/customer-value", nil), 200, []int{1, 2})
	expectError(t, call(t, srv, "DELETE", "/subjects/address-value/versions/1", nil), 422, 42206, "references exist")
	expect(t, call(t, srv, "DELETE", "/subjects/customer-value?permanent=true", nil), 200, []int{1, 2})
	expect(t, call(t, srv, "GET", "/subjects/address-value/versions/1/referencedby", nil), 200, []int{})
	expect(t, call(t, srv, "DELETE", "/subjects/address-value/versions/1", nil), 200, 1)
}

func TestRESTListingAndNormalize(t *testing.T) {
	srv := newServer(t, newMemStore(t))
	// normalize stores the canonical form; the id is the same either way.
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions?normalize=true", schemaBody(userV1b)), 200, map[string]int{"id": 1})
	canonical := `{"name":"ex.User","type":"record","fields":[{"name":"id","type":"long"}]}`
	expect(t, call(t, srv, "GET", "/schemas/ids/1", nil), 200, map[string]any{"schema": canonical})
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV1)), 200, map[string]int{"id": 1})
	expect(t, call(t, srv, "POST", "/subjects/users-value?normalize=true", schemaBody(userV1)), 200,
		map[string]any{"subject": "users-value", "version": 1, "id": 1, "schema": canonical})
	expect(t, call(t, srv, "POST", "/subjects/users-value/versions", schemaBody(userV2)), 200, map[string]int{"id": 2})
	expect(t, call(t, srv, "POST", "/subjects/orders-value/versions", schemaBody(`"string"`)), 200, map[string]int{"id": 3})
	expect(t, call(t, srv, "POST", "/subjects/users-key/versions", schemaBody(`"long"`)), 200, map[string]int{"id": 4})
	expect(t, call(t, srv, "DELETE", "/subjects/users-key", nil), 200, []int{1})

	expect(t, call(t, srv, "GET", "/subjects?subjectPrefix=users", nil), 200, []string{"users-value"})
	expect(t, call(t, srv, "GET", "/subjects?subjectPrefix=users&deleted=true", nil), 200, []string{"users-key", "users-value"})
	expect(t, call(t, srv, "GET", "/subjects?deletedOnly=true", nil), 200, []string{"users-key"})

	u1 := map[string]any{"subject": "users-value", "version": 1, "id": 1, "schema": canonical}
	u2 := map[string]any{"subject": "users-value", "version": 2, "id": 2, "schema": userV2}
	o1 := map[string]any{"subject": "orders-value", "version": 1, "id": 3, "schema": `"string"`}
	k1 := map[string]any{"subject": "users-key", "version": 1, "id": 4, "schema": `"long"`}
	expect(t, call(t, srv, "GET", "/schemas", nil), 200, []any{o1, u1, u2})
	expect(t, call(t, srv, "GET", "/schemas?subjectPrefix=users", nil), 200, []any{u1, u2})
	expect(t, call(t, srv, "GET", "/schemas?subjectPrefix=users&latestOnly=true", nil), 200, []any{u2})
	expect(t, call(t, srv, "GET", "/schemas?subjectPrefix=users&deleted=true", nil), 200, []any{k1, u1, u2})
	expect(t, call(t, srv, "GET", "/schemas?offset=1&limit=1", nil), 200, []any{u1})
	expect(t, call(t, srv, "GET", "/schemas?subjectPrefix=none", nil), 200, []any{})
}
