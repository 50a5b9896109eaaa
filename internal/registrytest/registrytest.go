// Package registrytest serves a schema registry for tests: the real
// registry (package schema/registry) on an in-memory store, behind its
// Confluent-compatible REST API on a loopback port, until the test ends.
// It is the one such fixture; a test makes its own client of the URL
// (client/serde's own tests cannot import a package importing serde).
package registrytest

import (
	"net/http/httptest"
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
