package network

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// SASLKeys are the sasl.* keys SecurityFromProperties reads, without their
// prefix: Kafka's, and librdkafka's sasl.mechanisms, sasl.username and
// sasl.password.
var SASLKeys = []string{"sasl.mechanism", "sasl.mechanisms", "sasl.jaas.config", "sasl.username", "sasl.password"}

// SecurityKeys are every key SecurityFromProperties reads, without their
// prefix. Kafka's config.providers keys are accepted too (and ignored: see
// security.ExpandSecrets), so that one file serves the Java tools and us.
var SecurityKeys = slices.Concat([]string{"security.protocol"}, SASLKeys, security.TLSKeys,
	[]string{"config.providers"})

// ClientKeys are every key ClientFromProperties reads, without their prefix.
var ClientKeys = slices.Concat([]string{"bootstrap.servers", "client.id"}, SecurityKeys)

// ClientFromProperties reads a client's bootstrap.servers and client.id
// and its security settings (SecurityFromProperties), each key under
// prefix. Values refused by p's getters are in p.Err(); the error returned
// is SecurityFromProperties's.
func ClientFromProperties(p *properties.Props, prefix string) (ClientConfig, error) {
	c := ClientConfig{
		Brokers:  p.List(prefix + "bootstrap.servers"),
		ClientID: p.String(prefix + "client.id"),
	}
	s, err := SecurityFromProperties(p, prefix)
	return c.Secured(s), err
}

// SecurityFromProperties reads Kafka's client security keys under prefix
// ("" for a client's own file, "source.dc1." for a mirror source):
//
//	security.protocol   PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL
//	ssl.*               see internal/security; read only for SSL and SASL_SSL,
//	                    when the files are loaded (a missing file is an error now,
//	                    not at the first connection)
//	sasl.mechanism      PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (librdkafka: sasl.mechanisms)
//	sasl.jaas.config    org.apache.kafka.common.security.plain.PlainLoginModule (or
//	                    scram.ScramLoginModule) required username="…" password="…";
//	sasl.username, sasl.password   librdkafka's spelling, instead of sasl.jaas.config
//
// Passwords, sasl.jaas.config and ssl.keystore.key may hold ${env:NAME},
// ${file:PATH} or ${file:PATH:KEY} references (security.ExpandSecrets), so
// that no secret need be written in the file or given on a command line.
// The ssl.* and sasl.* keys are read whatever the protocol, so a file shared
// between clients draws no unknown-key warning; they take effect only under
// a protocol that uses them, as in Kafka.
//
// Errors name the key at fault (with its prefix) but never a secret value,
// which is why they are returned rather than recorded in p; the ssl.* type
// and choice problems TLSFromProperties finds are recorded in p.
func SecurityFromProperties(p *properties.Props, prefix string) (Security, error) {
	var errs []error
	bad := func(key string, err error) { errs = append(errs, fmt.Errorf("%s%s: %w", prefix, key, err)) }
	secret := func(key, v string) string {
		out, err := security.ExpandSecrets(v)
		if err != nil {
			bad(key, err)
		}
		return out
	}
	for _, k := range p.Keys() {
		if k == prefix+"config.providers" || strings.HasPrefix(k, prefix+"config.providers.") {
			p.Ignore(k)
		}
	}

	var s Security
	proto, err := security.ParseProtocol(p.String(prefix + "security.protocol"))
	if err != nil {
		bad("security.protocol", err)
	}
	s.Protocol = proto

	t := security.TLSFromProperties(p, prefix)
	if proto.TLS() {
		t.KeystorePassword = secret("ssl.keystore.password", t.KeystorePassword)
		t.KeyPassword = secret("ssl.key.password", t.KeyPassword)
		t.TruststorePassword = secret("ssl.truststore.password", t.TruststorePassword)
		t.KeystoreKey = secret("ssl.keystore.key", t.KeystoreKey)
		if len(errs) == 0 {
			if s.TLS, err = t.ClientConfig(""); err != nil {
				bad(tlsKeyIn(err), err)
			}
		}
	}

	mech := p.String(prefix + "sasl.mechanism")
	if alt := p.String(prefix + "sasl.mechanisms"); alt != "" {
		if mech != "" && !strings.EqualFold(mech, alt) {
			bad("sasl.mechanisms", errors.New("differs from sasl.mechanism; give one"))
		}
		mech = alt
	}
	jaas, jaasSet := p.Lookup(prefix + "sasl.jaas.config")
	user := p.String(prefix + "sasl.username")
	pass, passSet := p.Lookup(prefix + "sasl.password")
	if !proto.SASL() {
		return s, errors.Join(errs...)
	}
	if s.SASL.Mechanism, err = security.ParseMechanism(mech); err != nil {
		bad("sasl.mechanism", err)
	}
	switch {
	case jaasSet && (user != "" || passSet):
		bad("sasl.jaas.config", errors.New("give sasl.jaas.config or sasl.username and sasl.password, not both"))
	case jaasSet:
		creds, err := security.SASLFromJAAS(s.SASL.Mechanism, secret("sasl.jaas.config", jaas))
		if err != nil {
			bad("sasl.jaas.config", err)
		}
		s.SASL.Username, s.SASL.Password = creds.Username, creds.Password
	case user == "":
		bad("sasl.username", fmt.Errorf("security.protocol=%s needs sasl.jaas.config, or sasl.username and sasl.password", proto))
	case !passSet:
		bad("sasl.password", errors.New("sasl.username is set, sasl.password is not (it may be ${env:NAME} or ${file:PATH})"))
	default:
		s.SASL.Username = secret("sasl.username", user)
		s.SASL.Password = secret("sasl.password", pass)
	}
	return s, errors.Join(errs...)
}

// tlsKeyIn is the ssl.* key a TLS loading error names (they name the key
// without the prefix), security.protocol when it names none.
func tlsKeyIn(err error) string {
	msg, best := err.Error(), ""
	for _, k := range security.TLSKeys {
		if strings.Contains(msg, k) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return "security.protocol"
	}
	return best
}
