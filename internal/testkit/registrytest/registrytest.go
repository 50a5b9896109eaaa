// Package registrytest serves a schema registry for tests: the real
// registry (package schema/registry) on an in-memory store, behind its
// Confluent-compatible REST API on a loopback port, until the test ends.
// It is the one such fixture; a test makes its own client of the URL
// (client/serde's own tests cannot import a package importing serde).
package registrytest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tributary/tributary/schema/registry"
)

// Serve starts a registry on a new in-memory store and returns its URL;
// it is closed when t ends.
func Serve(t testing.TB) string {
	t.Helper()
	reg, err := registry.New(registry.NewMemStore(), registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// SetCompatibility sets subject's compatibility level on the registry at
// url (PUT /config/{subject}), failing t unless it answers 200.
func SetCompatibility(t testing.TB, url, subject, level string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url+"/config/"+subject, strings.NewReader(`{"compatibility":"`+level+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /config/%s: %s", subject, resp.Status)
	}
}
