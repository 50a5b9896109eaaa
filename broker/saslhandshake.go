package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/sasl"
)

// SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator: before a connection has authenticated, only
// ApiVersions and SaslHandshake (then SaslAuthenticate) are served, and
// any other request closes the connection. SaslHandshake v0, after which
// Kafka reads raw SASL tokens without Kafka framing, is not offered:
// franz-go, librdkafka and the Java client since 1.0 use v1 and
// SaslAuthenticate. A connection that has not authenticated within
// sasl.handshake.timeout.ms is closed. With connections.max.reauth.ms
// (KIP-368) the client must log in again, with the same mechanism and as
// the same principal, before its session expires; a request other than
// SaslHandshake and SaslAuthenticate after expiry closes the connection.

// saslState is a connection's SASL progress. Only the connection's
// serving goroutine touches it, but for done, which the handshake timer
// reads.
type saslState struct {
	// session is the login in progress, between SaslHandshake and the
	// end of the SaslAuthenticate exchange.
	session sasl.Session
	// attempt is the user the client named in the login in progress, for
	// the log.
	attempt string
	// mechanism and principal are the last successful login's; expires
	// is when it runs out (zero: never).
	mechanism string
	principal string
	expires   time.Time
	// done is set by the first successful login.
	done atomic.Bool
}

// errUnauthenticated: a request other than ApiVersions or SASL arrived on
// a SASL listener before authentication (or after the session expired).
var errUnauthenticated = errors.New("request before SASL authentication")

// newAuthenticator builds the SASL authenticator of listener name; the
// SCRAM mechanisms check the broker's credential store.
func (b *Broker) newAuthenticator(name string) (*sasl.Authenticator, error) {
	cfg := b.cfg.SASLFor(name)
	var creds sasl.ScramCredentials
	mechs := cfg.Mechanisms
	if len(mechs) == 0 || strings.Contains(strings.Join(mechs, ","), "SCRAM") {
		store, err := b.ScramCredentials()
		if err != nil {
			return nil, err
		}
		creds = store
	}
	return sasl.New(cfg, creds, b.logger.With("listener", name))
}

// saslGate says whether r may be served on c now; an error closes c.
func (b *Broker) saslGate(c *connection, r *request) error {
	if c == nil || c.listener == nil || c.listener.sasl == nil {
		return nil
	}
	switch kmsg.Key(r.key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake:
		return nil
	case kmsg.SASLAuthenticate:
		if c.sasl.session != nil {
			return nil
		}
		return fmt.Errorf("%w: SaslAuthenticate without a SaslHandshake", errUnauthenticated)
	}
	if !c.sasl.done.Load() {
		return fmt.Errorf("%w: unexpected %s during SASL handshake", errUnauthenticated, kmsg.NameForKey(r.key))
	}
	if !c.sasl.expires.IsZero() && time.Now().After(c.sasl.expires) {
		return fmt.Errorf("%w: session expired (connections.max.reauth.ms) and the client did not re-authenticate", errUnauthenticated)
	}
	return nil
}

// refuseUnauthenticated counts and logs, rate-limited, a connection closed
// by saslGate.
func (b *Broker) refuseUnauthenticated(c *connection, r *request, err error) {
	b.metrics.requestErrors.WithLabelValues("sasl_unauthenticated").Inc()
	b.res.logs.log(slog.LevelWarn, "sasl-unauthenticated-"+c.listener.name, "request refused before SASL authentication; connection closed",
		"listener", c.listener.name, "remote", c.RemoteAddr().String(), "client_id", clientIDOf(r), "err", err)
}

// closeUnauthenticated closes c unless it has authenticated by then: a
// connection may not hold its max.connections slot without logging in.
func (b *Broker) closeUnauthenticated(c *connection) *time.Timer {
	timeout := b.cfg.SASLHandshakeTimeout()
	return time.AfterFunc(timeout, func() {
		if c.sasl.done.Load() || b.shutdownCtx.Err() != nil {
			return
		}
		b.metrics.requestErrors.WithLabelValues("sasl_timeout").Inc()
		b.res.logs.log(slog.LevelInfo, "sasl-timeout-"+c.listener.name, "connection closed: no SASL authentication in time",
			"listener", c.listener.name, "remote", c.RemoteAddr().String(), "sasl.handshake.timeout.ms", timeout.Milliseconds())
		_ = c.Close()
	})
}

// handleSASLHandshake starts a login with the requested mechanism. An
// unknown or disabled mechanism is UNSUPPORTED_SASL_MECHANISM with the
// enabled list, and the connection is closed, as Kafka does. On a
// listener without SASL, or twice in one login, it is ILLEGAL_SASL_STATE.
func (b *Broker) handleSASLHandshake(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c := r.conn
	if c == nil || c.listener == nil || c.listener.sasl == nil || c.sasl.session != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if c != nil {
			c.closeAfterReply = true
		}
		return kmsgReply{resp}, nil
	}
	auth := c.listener.sasl
	resp.SupportedMechanisms = auth.Mechanisms()
	if c.sasl.done.Load() && req.Mechanism != c.sasl.mechanism {
		// Re-authentication must keep the mechanism (KIP-368).
		b.saslFailed(c, r, req.Mechanism, fmt.Errorf("re-authentication with %s, the connection logged in with %s", req.Mechanism, c.sasl.mechanism))
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfterReply = true
		return kmsgReply{resp}, nil
	}
	sess, err := auth.Start(req.Mechanism)
	if err != nil {
		b.saslFailed(c, r, req.Mechanism, err)
		resp.ErrorCode = scramErrorCode(err).Code
		c.closeAfterReply = true
		return kmsgReply{resp}, nil
	}
	c.sasl.session, c.sasl.attempt = sess, ""
	if r.version == 0 {
		c.rawSASL.Store(true)
	}
	return kmsgReply{resp}, nil
}

// saslFailed counts and logs, rate-limited per listener, a refused login
// with what the client tried.
func (b *Broker) saslFailed(c *connection, r *request, mechanism string, err error) {
	b.metrics.requestErrors.WithLabelValues("sasl_authentication").Inc()
	b.res.logs.log(slog.LevelWarn, "sasl-failed-"+c.listener.name, "SASL authentication failed; connection closed",
		"listener", c.listener.name, "remote", c.RemoteAddr().String(), "client_id", clientIDOf(r),
		"mechanism", mechanism, "user", c.sasl.attempt, "reason", sasl.Reason(err))
}
