package sasl

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// TestFromProperties: Kafka's keys, with listener.name.<listener>.
// overrides winning for that listener only.
func TestFromProperties(t *testing.T) {
	m := map[string]string{
		"sasl.enabled.mechanisms":                          "SCRAM-SHA-512, PLAIN",
		"sasl.plain.users.file":                            "/etc/users",
		"connections.max.reauth.ms":                        "3600000",
		"listener.name.external.sasl.enabled.mechanisms":   "SCRAM-SHA-256",
		"listener.name.external.connections.max.reauth.ms": "60000",
		"listener.name.internal.sasl.plain.users.file":     "/etc/internal-users",
	}
	p := properties.New(m)
	ext := FromProperties(p, "EXTERNAL")
	in := FromProperties(p, "INTERNAL")
	all := FromProperties(p, "")
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ext.Mechanisms, []string{ScramSHA256}) || ext.MaxReauth != time.Minute || ext.PlainUsersFile != "/etc/users" {
		t.Errorf("EXTERNAL: %+v", ext)
	}
	if !slices.Equal(in.Mechanisms, []string{ScramSHA512, Plain}) || in.MaxReauth != time.Hour || in.PlainUsersFile != "/etc/internal-users" {
		t.Errorf("INTERNAL: %+v", in)
	}
	if all.PlainUsersFile != "/etc/users" {
		t.Errorf("broker-wide: %+v", all)
	}
	if err := (Config{Mechanisms: []string{"GSSAPI"}}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("GSSAPI: %v, want ErrInvalidConfig", err)
	}
	a, err := New(Config{MaxReauth: time.Minute}, StaticScramCredentials{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Mechanisms(), []string{ScramSHA256, ScramSHA512}) {
		t.Errorf("default mechanisms %v", a.Mechanisms())
	}
	if s, _ := a.Start(ScramSHA512); s.Lifetime() != time.Minute {
		t.Errorf("session lifetime %v, want connections.max.reauth.ms", s.Lifetime())
	}
	if _, err := New(Config{}, nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("SCRAM without a credential store: %v", err)
	}
}
