package broker

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/coord"
)

// The SCRAM credentials of every user live in the coordination service
// (/config/users, Kafka's layout; broker/sasl). The broker's store is made
// on first use, through the broker's own session factory, and runs until
// Close begins (shutdownCtx).

// scramStore holds the broker's credential store once made.
type scramStore struct {
	once  sync.Once
	store *sasl.CredentialStore
}

// ScramCredentials returns the broker's SCRAM credential store, started
// on the first call: its cache follows /config/users through the change
// notifications, and it is the store of the SASL authenticators and of
// DescribeUserScramCredentials / AlterUserScramCredentials. It stops when
// the broker closes.
func (b *Broker) ScramCredentials() (*sasl.CredentialStore, error) {
	if err := b.shutdownCtx.Err(); err != nil {
		return nil, ErrClosed
	}
	s := &b.scram
	s.once.Do(func() {
		s.store = sasl.NewCredentialStore(b.shutdownCtx, func(ctx context.Context) (coord.Session, error) {
			return b.connect(ctx)
		}, b.logger.With("component", "scram-credentials"))
		go func() {
			<-b.done
			_ = s.store.Close()
		}()
	})
	return s.store, nil
}

// scramErrorCode maps the errors of broker/sasl to Kafka's error codes, for
// the SASL and SCRAM credential APIs.
func scramErrorCode(err error) *kerr.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sasl.ErrAuthenticationFailed):
		return kerr.SaslAuthenticationFailed
	case errors.Is(err, sasl.ErrUnsupportedMechanism):
		return kerr.UnsupportedSaslMechanism
	case errors.Is(err, sasl.ErrIllegalState):
		return kerr.IllegalSaslState
	case errors.Is(err, sasl.ErrCredentialNotFound):
		return kerr.ResourceNotFound
	case errors.Is(err, sasl.ErrUnacceptableCredential):
		return kerr.UnacceptableCredential
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, coord.ErrUnavailable), errors.Is(err, coord.ErrSessionExpired):
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}
