package broker

import (
	"os"
	"testing"

	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestMain removes the tributary binary the process tests build.
func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// writeProperties writes a server.properties file for a child broker.
func writeProperties(t testing.TB, props map[string]string) string {
	t.Helper()
	return testproc.WriteProperties(t, t.TempDir(), "server.properties", props)
}
