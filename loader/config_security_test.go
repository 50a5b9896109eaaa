package loader

import (
	"strings"
	"testing"
)

// TestSecurityKeys: the loader's own security keys, and audit.* ones for
// its audit publisher (none: the same as the loader's).
func TestSecurityKeys(t *testing.T) {
	base := map[string]string{
		"name": "job", "bootstrap.servers": "127.0.0.1:1", "schema.registry.url": "http://127.0.0.1:2",
		"topics": "t", "output.uri": "file:///out",
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.username": "loader", "sasl.password": "${env:TRIBUTARY_TEST_LOADER_PASSWORD}",
	}
	t.Setenv("TRIBUTARY_TEST_LOADER_PASSWORD", "pw")
	c, unknown, err := ConfigFromProperties(base)
	if err != nil || len(unknown) > 0 {
		t.Fatal(err, unknown)
	}
	if c.Security.Protocol != "SASL_PLAINTEXT" || c.Security.SASL.Username != "loader" || c.Security.SASL.Password != "pw" {
		t.Errorf("security %+v", c.Security)
	}
	if c.AuditSecurity != nil {
		t.Errorf("audit security %+v without audit.* keys, want nil (the loader's)", c.AuditSecurity)
	}
	c.fill()
	if c.AuditSecurity == nil || *c.AuditSecurity != c.Security {
		t.Errorf("filled audit security %+v, want the loader's", c.AuditSecurity)
	}

	base["audit.security.protocol"] = "SASL_PLAINTEXT"
	base["audit.sasl.mechanism"] = "SCRAM-SHA-256"
	base["audit.sasl.username"] = "auditor"
	base["audit.sasl.password"] = "x"
	c, unknown, err = ConfigFromProperties(base)
	if err != nil || len(unknown) > 0 {
		t.Fatal(err, unknown)
	}
	if c.AuditSecurity == nil || c.AuditSecurity.SASL.Username != "auditor" || c.AuditSecurity.SASL.Mechanism != "SCRAM-SHA-256" {
		t.Errorf("audit security %+v", c.AuditSecurity)
	}
	delete(base, "audit.sasl.password")
	if _, _, err := ConfigFromProperties(base); err == nil || !strings.Contains(err.Error(), "audit.sasl.password") {
		t.Errorf("error %v does not name audit.sasl.password", err)
	}
}
