package network

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/internal/security"
)

// ClientConfig is what every Kafka client needs to reach a cluster. The
// zero value of each field means franz-go's default.
type ClientConfig struct {
	// Brokers are the bootstrap servers, HOST:PORT (bootstrap.servers).
	Brokers []string
	// ClientID is the client.id sent with every request; "" sends
	// franz-go's default.
	ClientID string
	// DialTimeout bounds opening one connection; 0 is franz-go's 10 s.
	DialTimeout time.Duration
	// RequestTimeoutOverhead is added to a request's own timeout (or
	// bounds requests that have none) before the client gives up on the
	// connection; 0 is franz-go's 10 s.
	RequestTimeoutOverhead time.Duration
	// Logger receives franz-go's log lines one level down (see
	// KgoLogger); nil logs nothing.
	Logger *slog.Logger

	// Protocol is security.protocol. "" means PLAINTEXT, unless TLS or
	// SASL is set: then SSL, SASL_PLAINTEXT or SASL_SSL as they say.
	Protocol security.Protocol
	// TLS is the crypto/tls configuration of SSL and SASL_SSL connections
	// (kgo.DialTLSConfig; kgo sets ServerName from each broker's address
	// when it is empty). nil with a TLS protocol is Go's defaults: TLS 1.2
	// or later, the system roots.
	TLS *tls.Config
	// SASL is the mechanism and credentials of SASL_PLAINTEXT and
	// SASL_SSL connections.
	SASL security.SASL
}

// Security is the part of a ClientConfig that secures its connections, for
// configurations that keep it apart from their bootstrap servers (the
// mirror's sources and target, the loader, the client library).
type Security struct {
	Protocol security.Protocol
	TLS      *tls.Config
	SASL     security.SASL
}

// Secured returns c with s's security settings.
func (c ClientConfig) Secured(s Security) ClientConfig {
	c.Protocol, c.TLS, c.SASL = s.Protocol, s.TLS, s.SASL
	return c
}

// Security returns c's security settings.
func (c ClientConfig) Security() Security {
	return Security{Protocol: c.Protocol, TLS: c.TLS, SASL: c.SASL}
}

// EffectiveProtocol is the protocol c connects with: Protocol, or when it
// is empty the one TLS and SASL imply.
func (c ClientConfig) EffectiveProtocol() security.Protocol {
	if c.Protocol != "" {
		return c.Protocol
	}
	switch tlsSet, saslSet := c.TLS != nil, c.SASL != (security.SASL{}); {
	case tlsSet && saslSet:
		return security.SASLSSL
	case tlsSet:
		return security.SSL
	case saslSet:
		return security.SASLPlaintext
	}
	return security.Plaintext
}

// Validate checks the security settings: a known protocol, TLS only with a
// TLS protocol, SASL credentials with a SASL protocol and only with one.
func (c ClientConfig) Validate() error {
	p := c.EffectiveProtocol()
	if _, err := security.ParseProtocol(string(p)); err != nil {
		return fmt.Errorf("security.protocol: %w", err)
	}
	if c.TLS != nil && !p.TLS() {
		return fmt.Errorf("%w: TLS settings given for security.protocol=%s", security.ErrBadTLS, p)
	}
	saslSet := c.SASL != (security.SASL{})
	switch {
	case p.SASL() && !saslSet:
		return fmt.Errorf("%w: security.protocol=%s needs sasl.mechanism and credentials", security.ErrUnknownMechanism, p)
	case p.SASL():
		if err := c.SASL.Validate(); err != nil {
			return fmt.Errorf("sasl.mechanism: %w", err)
		}
	case saslSet:
		return fmt.Errorf("%w: SASL credentials given for security.protocol=%s", security.ErrUnknownMechanism, p)
	}
	return nil
}

// Opts returns the connection options for c; callers append their producer
// or consumer options. It assumes c is valid (NewClient checks).
func (c ClientConfig) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	p := c.EffectiveProtocol()
	if p.TLS() {
		cfg := c.TLS
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if m := saslMechanism(c.SASL); p.SASL() && m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.DialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(c.DialTimeout))
	}
	if c.RequestTimeoutOverhead > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(c.RequestTimeoutOverhead))
	}
	if c.Logger != nil {
		opts = append(opts, kgo.WithLogger(KgoLogger(c.Logger)))
	}
	return opts
}

// NewClient returns a client connecting as c says, with extra options
// (producing, consuming, partitioning) after c's. It does not contact the
// cluster; the first request does.
func NewClient(c ClientConfig, extra ...kgo.Opt) (*kgo.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return kgo.NewClient(append(c.Opts(), extra...)...)
}

// saslMechanism is franz-go's mechanism for s; nil for an unknown one.
func saslMechanism(s security.SASL) sasl.Mechanism {
	m, _ := security.ParseMechanism(s.Mechanism)
	switch m {
	case security.MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case security.MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case security.MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

// KgoLogger forwards franz-go's log lines to l, one level down: kgo's info
// is chatty (every metadata refresh and assignment), so it is logged at
// debug, and only asked for when l logs debug.
func KgoLogger(l *slog.Logger) kgo.Logger { return kgoLogger{l} }

type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	if k.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	k.l.Log(context.Background(), lv, "kgo: "+msg, keyvals...)
}
