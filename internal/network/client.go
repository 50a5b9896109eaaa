package network

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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

	// TLS, when set, dials every broker over TLS with it (security.protocol
	// SSL or SASL_SSL); nil is plaintext. SASL will sit beside it.
	TLS *tls.Config
}

// Opts returns the connection options for c; callers append their producer
// or consumer options.
func (c ClientConfig) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
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
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.Clone()))
	}
	return opts
}

// NewClient returns a client connecting as c says, with extra options
// (producing, consuming, partitioning) after c's. It does not contact the
// cluster; the first request does.
func NewClient(c ClientConfig, extra ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(c.Opts(), extra...)...)
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
