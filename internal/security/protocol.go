package security

import (
	"fmt"
	"strings"
)

// Protocol is a Kafka security protocol (security.protocol,
// listener.security.protocol.map).
type Protocol string

// The four protocols Kafka knows.
const (
	Plaintext     Protocol = "PLAINTEXT"
	SSL           Protocol = "SSL"
	SASLPlaintext Protocol = "SASL_PLAINTEXT"
	SASLSSL       Protocol = "SASL_SSL"
)

// ParseProtocol reads a protocol name, case-insensitively as Kafka does; ""
// is PLAINTEXT.
func ParseProtocol(s string) (Protocol, error) {
	switch p := Protocol(strings.ToUpper(strings.TrimSpace(s))); p {
	case "":
		return Plaintext, nil
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("%w: %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", ErrUnknownProtocol, s)
}

// TLS reports whether the protocol runs over TLS.
func (p Protocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether the protocol authenticates with SASL.
func (p Protocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }
