package client

import (
	"errors"
	"fmt"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// Security secures a client's connections: Protocol (security.protocol),
// TLS (a *tls.Config, used by SSL and SASL_SSL) and SASL (mechanism and
// credentials, used by SASL_PLAINTEXT and SASL_SSL). The zero value is
// PLAINTEXT.
type Security = network.Security

// SASL is a SASL mechanism (MechanismPlain, MechanismScramSHA256,
// MechanismScramSHA512) and credentials.
type SASL = security.SASL

// The security protocols and SASL mechanisms, Kafka's names.
const (
	Plaintext     = security.Plaintext
	SSL           = security.SSL
	SASLPlaintext = security.SASLPlaintext
	SASLSSL       = security.SASLSSL

	MechanismPlain       = security.MechanismPlain
	MechanismScramSHA256 = security.MechanismScramSHA256
	MechanismScramSHA512 = security.MechanismScramSHA512
)

// SecurityFromProperties reads Kafka's client security keys
// (security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config, librdkafka's
// sasl.username and sasl.password; secrets may be ${env:NAME} or
// ${file:PATH} references) from props, as a Kafka client's properties file
// gives them. Keys it does not know are returned for the caller to warn
// about; errors name the key, never a secret.
func SecurityFromProperties(props map[string]string) (Security, []string, error) {
	p := properties.New(props)
	s, err := network.SecurityFromProperties(p, "")
	if perr := p.Err(); perr != nil || err != nil {
		return s, p.Unknown(), fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(perr, err))
	}
	return s, p.Unknown(), nil
}
