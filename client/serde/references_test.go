package serde

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/registrytest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/schema"
	"github.com/tributary/tributary/schema/avro"
)

// registerRaw registers through the REST API with a body the client's
// Register cannot send (references), returning the id.
func registerRaw(t *testing.T, base, subject string, body map[string]any) int {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(base+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID int `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.ID == 0 {
		t.Fatalf("register %s: HTTP %d, %v, %+v", subject, resp.StatusCode, err, out)
	}
	return out.ID
}

func TestDecodeWithReferences(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	url := registrytest.Serve(t)
	const (
		country  = `{"type":"enum","name":"Country","namespace":"com.acme","symbols":["FR","NZ"]}`
		address  = `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"street","type":"string"},{"name":"country","type":"Country"}]}`
		customer = `{"type":"record","name":"Customer","namespace":"com.acme","fields":[{"name":"name","type":"string"},{"name":"home","type":"Address"}]}`
	)
	registerRaw(t, url, "country-value", map[string]any{"schema": country})
	registerRaw(t, url, "address-value", map[string]any{"schema": address,
		"references": []any{map[string]any{"name": "com.acme.Country", "subject": "country-value", "version": 1}}})
	id := registerRaw(t, url, "customer-value", map[string]any{"schema": customer,
		"references": []any{map[string]any{"name": "com.acme.Address", "subject": "address-value", "version": 1}}})

	// The producer side, as a Confluent serializer with references would
	// write it: the frame of the customer id, then Avro.
	c, _ := avro.Parse(country)
	a, err := avro.ParseWithReferences(address, []*avro.Schema{c})
	if err != nil {
		t.Fatal(err)
	}
	w, err := avro.ParseWithReferences(customer, []*avro.Schema{a})
	if err != nil {
		t.Fatal(err)
	}
	value := map[string]any{"name": "Ana", "home": map[string]any{"street": "1 Queen St", "country": "NZ"}}
	payload, err := w.Codec().BinaryFromNative(schema.AppendHeader(nil, schema.ID(id)), value)
	if err != nil {
		t.Fatal(err)
	}

	client, err := NewRegistryClient(ClientConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDeserializer(client)
	got, gotID, err := d.Decode(ctx, payload)
	if err != nil || gotID != id || !reflect.DeepEqual(got, value) {
		t.Fatalf("Decode = %v, %d, %v; want %v, %d", got, gotID, err, value, id)
	}
	// Into a reader that knows the types inline (no references).
	reader, err := ParseSchema(`{"type":"record","name":"Customer","namespace":"com.acme","fields":[
		{"name":"home","type":{"type":"record","name":"Address","fields":[{"name":"country","type":{"type":"enum","name":"Country","symbols":["FR","NZ"]}}]}},
		{"name":"vip","type":"boolean","default":false}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = d.DecodeAs(ctx, payload, reader)
	want := map[string]any{"home": map[string]any{"country": "NZ"}, "vip": false}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeAs = %v, %v; want %v", got, err, want)
	}
	// A registry without references support cannot parse the writer.
	if _, _, err := NewDeserializer(plainRegistry{client}).Decode(ctx, payload); err == nil {
		t.Fatal("decoding without references succeeded")
	}
}

// plainRegistry hides the references methods of a RegistryClient.
type plainRegistry struct{ Registry }
