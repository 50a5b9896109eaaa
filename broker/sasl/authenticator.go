package sasl

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// Config is the SASL configuration of one listener. Zero values mean the
// default.
type Config struct {
	// Mechanisms is sasl.enabled.mechanisms: PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512. Default: SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's
	// default, GSSAPI, is not offered).
	Mechanisms []string
	// PlainUsersFile is sasl.plain.users.file, the users of PLAIN (see
	// UsersFile); required when PLAIN is enabled.
	PlainUsersFile string
	// MaxReauth is connections.max.reauth.ms (KIP-368): a session must
	// re-authenticate within it, or its connection is closed. 0: never.
	MaxReauth time.Duration
}

// Property keys (Kafka's, but for the users file, which Kafka leaves to
// a JAAS callback handler). Each may be given for one listener with
// Kafka's prefix, listener.name.<listener, lower case>.<key>, which wins.
const (
	KeyEnabledMechanisms = "sasl.enabled.mechanisms"
	KeyPlainUsersFile    = "sasl.plain.users.file"
	KeyMaxReauth         = "connections.max.reauth.ms"
)

// FromProperties reads the SASL keys of listener (its name, e.g.
// "SASL_SSL" or "EXTERNAL"; "" for the broker-wide keys only) from p.
// Problems are recorded in p (see properties.Props.Err).
func FromProperties(p *properties.Props, listener string) Config {
	get := func(key string) string {
		if listener != "" {
			lk := "listener.name." + strings.ToLower(listener) + "." + key
			if _, ok := p.Lookup(lk); ok {
				return lk
			}
		}
		return key
	}
	return Config{
		Mechanisms:     p.List(get(KeyEnabledMechanisms)),
		PlainUsersFile: p.String(get(KeyPlainUsersFile)),
		MaxReauth:      p.Duration(get(KeyMaxReauth), time.Millisecond, 0),
	}
}

// Validate checks the mechanisms against what is implemented.
func (c Config) Validate() error {
	for _, m := range c.Mechanisms {
		switch m {
		case Plain:
			if c.PlainUsersFile == "" {
				return fmt.Errorf("%w: %s lists PLAIN but %s is not set", ErrInvalidConfig, KeyEnabledMechanisms, KeyPlainUsersFile)
			}
		case ScramSHA256, ScramSHA512:
		default:
			return fmt.Errorf("%w: %s: mechanism %q is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)", ErrInvalidConfig, KeyEnabledMechanisms, m)
		}
	}
	if c.MaxReauth < 0 {
		return fmt.Errorf("%w: %s is negative", ErrInvalidConfig, KeyMaxReauth)
	}
	return nil
}

func (c Config) mechanisms() []string {
	if len(c.Mechanisms) == 0 {
		return []string{ScramSHA256, ScramSHA512}
	}
	return slices.Compact(slices.Clone(c.Mechanisms))
}

// Authenticator is the server side of SASL for one listener: it starts a
// Session per login. Safe for concurrent use.
type Authenticator struct {
	cfg    Config
	mechs  []string
	users  *UsersFile
	creds  ScramCredentials
	secret []byte
}

// New builds the authenticator of cfg. creds are the SCRAM credentials
// (the broker's CredentialStore); required when a SCRAM mechanism is
// enabled. logger may be nil.
func New(cfg Config, creds ScramCredentials, logger *slog.Logger) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: cfg, mechs: cfg.mechanisms(), creds: creds, secret: make([]byte, 32)}
	if _, err := rand.Read(a.secret); err != nil {
		return nil, fmt.Errorf("sasl: generating a secret: %w", err)
	}
	for _, m := range a.mechs {
		switch m {
		case Plain:
			u, err := OpenUsersFile(cfg.PlainUsersFile, logger)
			if err != nil {
				return nil, err
			}
			a.users = u
		case ScramSHA256, ScramSHA512:
			if creds == nil {
				return nil, fmt.Errorf("%w: %s lists %s but there is no SCRAM credential store", ErrInvalidConfig, KeyEnabledMechanisms, m)
			}
		}
	}
	return a, nil
}

// Mechanisms returns the enabled mechanisms, in configuration order (what
// SaslHandshake answers).
func (a *Authenticator) Mechanisms() []string { return slices.Clone(a.mechs) }

// Start begins a login with mechanism; an unknown or disabled mechanism
// is ErrUnsupportedMechanism.
func (a *Authenticator) Start(mechanism string) (Session, error) {
	if !slices.Contains(a.mechs, mechanism) {
		return nil, fmt.Errorf("%w: %q (enabled: %s)", ErrUnsupportedMechanism, mechanism, strings.Join(a.mechs, ", "))
	}
	if mechanism == Plain {
		return &plainSession{users: a.users, lifetime: a.cfg.MaxReauth}, nil
	}
	m, _ := ScramMechanismNamed(mechanism)
	return &scramSession{mech: m, creds: a.creds, secret: a.secret, lifetime: a.cfg.MaxReauth}, nil
}

// Session is one login on one connection. It is used by one goroutine.
type Session interface {
	// Mechanism is the session's mechanism name.
	Mechanism() string
	// Step takes the next client message (a SaslAuthenticate's
	// auth_bytes, or a v0 handshake's raw frame) and returns the server's
	// answer; done reports a successful login, after which serverMsg is
	// the last message to send. An error ends the session: it wraps
	// ErrAuthenticationFailed (send its Error(), which never says why;
	// log Reason(err)), or is ErrIllegalState for a Step after the end.
	Step(clientMsg []byte) (serverMsg []byte, done bool, err error)
	// Principal is the authenticated principal, "User:<name>", after done.
	Principal() string
	// Lifetime is how long the login is good for (KIP-368's
	// session_lifetime_ms, SaslAuthenticate v1+): the client must
	// re-authenticate within it, as the same principal, or the broker
	// closes the connection. 0: no limit.
	Lifetime() time.Duration
}
