package client

import (
	"errors"
	"strings"
	"testing"
)

func TestSecurityFromProperties(t *testing.T) {
	s, unknown, err := SecurityFromProperties(map[string]string{
		"security.protocol": "sasl_plaintext", "sasl.mechanism": "scram-sha-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="pw";`,
		"acks":             "all",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Protocol != SASLPlaintext || s.SASL != (SASL{Mechanism: MechanismScramSHA512, Username: "app", Password: "pw"}) {
		t.Errorf("security %+v", s)
	}
	if len(unknown) != 1 || unknown[0] != "acks" {
		t.Errorf("unknown %v, want [acks]", unknown)
	}
	_, _, err = SecurityFromProperties(map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "sasl.mechanism") {
		t.Errorf("GSSAPI: %v", err)
	}
	// The configuration reaches the client: NewProducer refuses what
	// network.ClientConfig.Validate refuses.
	if _, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:1"}, Security: Security{Protocol: SASLSSL}}); err == nil {
		t.Error("a SASL_SSL producer without credentials was built")
	}
}
