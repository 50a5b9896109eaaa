package network

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/tributary/tributary/internal/security"
)

// ClientAuth is whether an HTTPS server asks for client certificates
// (Confluent's ssl.client.authentication).
type ClientAuth int

// The three values of ssl.client.authentication.
const (
	// ClientAuthNone asks for no certificate.
	ClientAuthNone ClientAuth = iota
	// ClientAuthRequested verifies a certificate when the client sends one.
	ClientAuthRequested
	// ClientAuthRequired refuses a client without a trusted certificate.
	ClientAuthRequired
)

// ParseClientAuth reads NONE, REQUESTED or REQUIRED in any case; "" is
// NONE. Kafka's ssl.client.auth spellings (none, requested, required) are
// the same words.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "NONE":
		return ClientAuthNone, nil
	case "REQUESTED":
		return ClientAuthRequested, nil
	case "REQUIRED":
		return ClientAuthRequired, nil
	}
	return 0, fmt.Errorf("%w: %q: want NONE, REQUESTED or REQUIRED", security.ErrBadTLS, s)
}

func (c ClientAuth) String() string {
	return [...]string{"NONE", "REQUESTED", "REQUIRED"}[c]
}

// ServerTLS is the crypto/tls configuration of an HTTPS server with t's
// key pair (required), t's trust for client certificates (required unless
// ca is ClientAuthNone), versions and suites. It is built from
// security.TLS's loaders, so a keystore means the same for every listener.
func ServerTLS(t security.TLS, ca ClientAuth) (*tls.Config, error) {
	lo, hi, err := t.Versions()
	if err != nil {
		return nil, err
	}
	suites, err := t.Suites()
	if err != nil {
		return nil, err
	}
	cert, err := t.LoadKeyPair()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, fmt.Errorf("%w: ssl.keystore.location is required for an HTTPS listener", security.ErrBadTLS)
	}
	cfg := &tls.Config{
		MinVersion:   lo,
		MaxVersion:   hi,
		CipherSuites: suites,
		Certificates: []tls.Certificate{*cert},
	}
	if ca == ClientAuthNone {
		return cfg, nil
	}
	if cfg.ClientCAs, err = t.LoadTrust(); err != nil {
		return nil, err
	}
	if cfg.ClientCAs == nil {
		return nil, fmt.Errorf("%w: ssl.client.authentication=%s needs ssl.truststore.location", security.ErrBadTLS, ca)
	}
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if ca == ClientAuthRequired {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
