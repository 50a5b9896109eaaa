package pipeline

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
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
	if err := writeProperties(path, "a test", want); err != nil {
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

// TestSecureLoaderProperties: the secured loader's file, as the child
// process reads it, logs in as the loader over SASL_SSL and to the registry
// with the password of the loader's password file, which the file itself
// does not hold.
func TestSecureLoaderProperties(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Secure: true}.withDefaults()
	s, err := newSecureSetup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"name": LoaderJob, "bootstrap.servers": "127.0.0.1:1", "schema.registry.url": "https://127.0.0.1:2",
		"topics": "pageviews", "output.uri": "file:///tmp/out"}
	maps.Copy(props, s.clientProps("loader", clientsProtocol))
	maps.Copy(props, s.registryProps("loader"))
	path := filepath.Join(cfg.Dir, "loader.properties")
	if err := writeProperties(path, "a test", props); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := s.passwords["loader"]
	if strings.Contains(string(raw), pw) {
		t.Fatalf("the file holds the password:\n%s", raw)
	}
	got, err := properties.Read(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	lc, unknown, err := loader.ConfigFromProperties(got)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("loader config: %v, unknown %v", err, unknown)
	}
	if lc.Security.Protocol != security.SASLSSL || lc.Security.TLS == nil || lc.Security.SASL.Username != "loader" || lc.Security.SASL.Password != pw {
		t.Errorf("loader security %s %q (password from the file: %v)", lc.Security.Protocol, lc.Security.SASL.Username, lc.Security.SASL.Password == pw)
	}
	if lc.Registry.Username != "loader" || lc.Registry.Password != pw || lc.Registry.TLS.TruststoreLocation != s.ca {
		t.Errorf("registry client %q, password from the file: %v, truststore %q", lc.Registry.Username, lc.Registry.Password == pw, lc.Registry.TLS.TruststoreLocation)
	}
}
