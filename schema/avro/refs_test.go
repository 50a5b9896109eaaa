package avro

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const (
	refCountry = `{"type":"enum","name":"Country","namespace":"com.acme","symbols":["FR","NZ"]}`
	// refAddress uses Country by its short name inside com.acme.
	refAddress = `{"type":"record","name":"Address","namespace":"com.acme","fields":[
		{"name":"street","type":"string"},
		{"name":"country","type":"Country"}]}`
	// refOrder uses Address twice and Country through Address only: the
	// first use must get the inlined definition, the second a name.
	refOrder = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"ship","type":"com.acme.Address"},
		{"name":"bill","type":["null","com.acme.Address"],"default":null},
		{"name":"origin","type":"com.acme.Country"}]}`
)

func TestParseWithReferences(t *testing.T) {
	country := mustParse(t, refCountry)
	address, err := ParseWithReferences(refAddress, []*Schema{country})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(refAddress); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("Address without its reference: %v, want ErrInvalidSchema", err)
	}
	// Order refers to Address only; Country comes transitively.
	order, err := ParseWithReferences(refOrder, []*Schema{address})
	if err != nil {
		t.Fatal(err)
	}
	if order.Text != refOrder {
		t.Fatalf("Text changed: %s", order.Text)
	}
	want := `{"name":"shop.Order","type":"record","fields":[{"name":"ship","type":{"name":"com.acme.Address","type":"record","fields":[{"name":"street","type":"string"},{"name":"country","type":{"name":"com.acme.Country","type":"enum","symbols":["FR","NZ"]}}]}},{"name":"bill","type":["null","com.acme.Address"]},{"name":"origin","type":"com.acme.Country"}]}`
	if order.Canonical != want {
		t.Fatalf("canonical form\n got %s\nwant %s", order.Canonical, want)
	}
	v := map[string]any{
		"ship":   map[string]any{"street": "1 Queen St", "country": "NZ"},
		"bill":   map[string]any{"com.acme.Address": map[string]any{"street": "2 Rue", "country": "FR"}},
		"origin": "FR",
	}
	bin, err := order.Codec().BinaryFromNative(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := order.Validate(bin); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got, _, err := order.Codec().NativeFromBinary(bin)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: %v, %v; want %v", got, err, v)
	}
	// The Type tree shares one Address, so compatibility checks see it.
	if ship, bill := order.Root.Fields[0].Type, order.Root.Fields[1].Type.Branches[1]; ship != bill || ship.Name != "com.acme.Address" {
		t.Fatalf("Address types %p %p %q", ship, bill, ship.Name)
	}
	if problems := Check(order, order); len(problems) != 0 {
		t.Fatalf("self check: %v", problems)
	}
}

// A recursive referenced type and a local type that shadows nothing.
func TestParseWithReferencesRecursive(t *testing.T) {
	node := mustParse(t, `{"type":"record","name":"Node","namespace":"t","fields":[
		{"name":"v","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}`)
	list, err := ParseWithReferences(`{"type":"record","name":"List","fields":[{"name":"head","type":["null","t.Node"]}]}`, []*Schema{node})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.Canonical, `"next","type":["null","t.Node"]`) {
		t.Fatalf("canonical %s", list.Canonical)
	}
	if _, err := ParseWithReferences(`{"type":"record","name":"L","fields":[{"name":"x","type":"t.Missing"}]}`, []*Schema{node}); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("unknown type: %v", err)
	}
}
