package security

import (
	"fmt"
	"strings"
)

// The SASL mechanisms Tributary speaks (sasl.mechanism,
// sasl.enabled.mechanisms).
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SASL is a client's SASL mechanism and credentials. The zero value
// authenticates with nothing.
type SASL struct {
	Mechanism string
	Username  string
	Password  string
}

// ParseMechanism reads a mechanism name, case-insensitively.
func ParseMechanism(s string) (string, error) {
	switch m := strings.ToUpper(strings.TrimSpace(s)); m {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		return m, nil
	case "", "GSSAPI":
		// Kafka's and librdkafka's default; Kerberos is not supported.
		return "", fmt.Errorf("%w: %q: Kerberos (GSSAPI, the default) is not supported; want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ErrUnknownMechanism, s)
	}
	return "", fmt.Errorf("%w: %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ErrUnknownMechanism, s)
}

// Validate checks that s names a known mechanism and a username.
func (s SASL) Validate() error {
	if _, err := ParseMechanism(s.Mechanism); err != nil {
		return err
	}
	if s.Username == "" {
		return fmt.Errorf("%w: no username: set sasl.jaas.config, or sasl.username and sasl.password", ErrBadJAAS)
	}
	return nil
}
