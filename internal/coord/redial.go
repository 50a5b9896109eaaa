package coord

import (
	"context"
	"errors"
	"sync"
)

// Redialer holds the session of a component's occasional operations (an
// admin write, a one-off read) beside the session it follows the tree on:
// opened on first use and opened again once it has ended. It is safe for
// concurrent use.
type Redialer struct {
	connect   SessionFactory
	closedErr error

	mu     sync.Mutex
	sess   Session
	closed bool
}

// NewRedialer returns a Redialer opening sessions with connect; after
// Close, Do returns closedErr (the caller's own ErrClosed).
func NewRedialer(connect SessionFactory, closedErr error) *Redialer {
	return &Redialer{connect: connect, closedErr: closedErr}
}

// Do runs op on the session, and once more on a new session if the first
// one had expired or closed under it.
func (r *Redialer) Do(ctx context.Context, op func(Session) error) error {
	for attempt := 0; ; attempt++ {
		sess, err := r.session(ctx)
		if err != nil {
			return err
		}
		err = op(sess)
		if attempt == 0 && (errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrClosed)) {
			r.mu.Lock()
			if r.sess == sess {
				r.sess = nil
			}
			r.mu.Unlock()
			_ = sess.Close()
			continue
		}
		return err
	}
}

func (r *Redialer) session(ctx context.Context) (Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, r.closedErr
	}
	if r.sess != nil {
		return r.sess, nil
	}
	sess, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	r.sess = sess
	return sess, nil
}

// Close ends the session; Do returns the closed error afterwards.
func (r *Redialer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.sess == nil {
		return nil
	}
	err := r.sess.Close()
	r.sess = nil
	return err
}
