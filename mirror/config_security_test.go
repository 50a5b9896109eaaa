package mirror

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/security"
)

// TestSecurityPerSourceAndTarget: each source and the target read their
// own security keys; a bad one is an error naming it with its prefix.
func TestSecurityPerSourceAndTarget(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := ca.WritePEM(caFile); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("dc1-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	props := validProps()
	for k, v := range map[string]string{
		"source.dc1.security.protocol":       "SASL_SSL",
		"source.dc1.sasl.mechanism":          "SCRAM-SHA-512",
		"source.dc1.sasl.jaas.config":        security.ScramLoginModule + ` required username="mirror" password="${file:` + filepath.Join(dir, "pw") + `}";`,
		"source.dc1.ssl.truststore.location": caFile,
		"target.security.protocol":           "SSL",
		"target.ssl.truststore.location":     caFile,
	} {
		props[k] = v
	}
	c, unknown, err := ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) > 0 {
		t.Errorf("unknown keys %v", unknown)
	}
	byName := map[string]SourceConfig{}
	for _, s := range c.Sources {
		byName[s.Name] = s
	}
	dc1 := byName["dc1"].Security
	if dc1.Protocol != security.SASLSSL || dc1.TLS == nil || dc1.SASL != (security.SASL{Mechanism: "SCRAM-SHA-512", Username: "mirror", Password: "dc1-secret"}) {
		t.Errorf("source dc1 security %+v", dc1)
	}
	if two := byName["dc.two"].Security; two.Protocol != security.Plaintext || two.TLS != nil {
		t.Errorf("source dc.two security %+v, want PLAINTEXT", two)
	}
	if c.TargetSecurity.Protocol != security.SSL || c.TargetSecurity.TLS == nil || c.TargetSecurity.SASL != (security.SASL{}) {
		t.Errorf("target security %+v", c.TargetSecurity)
	}

	props["source.dc.two.security.protocol"] = "SASL_PLAINTEXT"
	props["target.ssl.truststore.location"] = filepath.Join(dir, "missing.pem")
	_, _, err = ConfigFromProperties(props)
	for _, key := range []string{"source.dc.two.sasl.mechanism", "target.ssl.truststore.location"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}
