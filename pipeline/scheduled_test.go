package pipeline

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/loader"
)

// TestLoaderPropertiesRoundTrip: the file the scheduled loader is given
// reads back to what was written, so a QuoteMeta'd topic keeps its
// backslashes (it used to come back as "page.views").
func TestLoaderPropertiesRoundTrip(t *testing.T) {
	want := map[string]string{
		"name": LoaderJob, "bootstrap.servers": "127.0.0.1:1", "schema.registry.url": "http://127.0.0.1:2",
		"topics": regexp.QuoteMeta("page.views+x"), "output.uri": "file:///tmp/out",
		"audit.cluster": AnalyticsCluster, "audit.window.ms": "60000",
	}
	path := filepath.Join(t.TempDir(), "loader.properties")
	if err := writeProperties(path, want); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := properties.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg, unknown, err := loader.ConfigFromProperties(got)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("loader config: %v, unknown %v", err, unknown)
	}
	if cfg.Topics != `page\.views\+x` {
		t.Fatalf("topics read back as %q, want %q", cfg.Topics, `page\.views\+x`)
	}
}
