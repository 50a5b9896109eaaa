package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/sasl"
)

// handleSASLAuthenticate steps the login SaslHandshake started. A refused
// login is SASL_AUTHENTICATION_FAILED with Kafka's message (the same for
// an unknown user as for a wrong password) and closes the connection. A
// successful one sets the connection's principal and, from v1, returns
// the session's lifetime (connections.max.reauth.ms); a re-authentication
// must come out as the principal of the first login.
func (b *Broker) handleSASLAuthenticate(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	if c == nil || c.sasl.session == nil {
		// saslGate closes such connections first; an in-process request
		// has no login to step.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return kmsgReply{resp}, nil
	}
	st := &c.sasl
	sess := st.session
	if st.attempt == "" {
		st.attempt = attemptedUser(sess.Mechanism(), req.SASLAuthBytes)
	}
	out, done, err := sess.Step(req.SASLAuthBytes)
	if err == nil && done && st.done.Load() && sess.Principal() != st.principal {
		err = fmt.Errorf("%w: cannot change principals during re-authentication from %s to %s",
			sasl.ErrAuthenticationFailed, st.principal, sess.Principal())
	}
	if err != nil {
		st.session = nil
		b.saslFailed(c, r, sess.Mechanism(), err)
		resp.ErrorCode = scramErrorCode(err).Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		c.closeAfterReply = true
		return kmsgReply{resp}, nil
	}
	resp.SASLAuthBytes = out
	if !done {
		return kmsgReply{resp}, nil
	}
	st.session = nil
	st.mechanism, st.principal = sess.Mechanism(), sess.Principal()
	st.expires = time.Time{}
	if life := sess.Lifetime(); life > 0 {
		st.expires = time.Now().Add(life)
		resp.SessionLifetimeMillis = life.Milliseconds()
	}
	c.setPrincipal(st.principal)
	if !st.done.Swap(true) && b.onPrincipal != nil {
		b.onPrincipal(c.listener.name, st.principal)
	}
	return kmsgReply{resp}, nil
}

// attemptedUser is the user a client's first SASL message names, for the
// log of a refused login; "" if it cannot be read.
func attemptedUser(mechanism string, msg []byte) string {
	if mechanism == sasl.Plain {
		if m, err := sasl.ParsePlain(msg); err == nil {
			return m.User
		}
		return ""
	}
	if m, err := sasl.ParseClientFirst(msg); err == nil {
		return m.User
	}
	return ""
}
