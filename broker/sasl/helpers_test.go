package sasl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// errClient marks a refusal by the client side (e.g. a bad server
// signature), which no test expects.
var errClient = errors.New("client refused the server")

// login drives a full exchange between franz-go's client implementation
// of mech and a session of a, message by message, as the broker's
// SaslAuthenticate handler will; it returns the session and the server's
// error.
func login(t testing.TB, a *Authenticator, mech kgosasl.Mechanism) (Session, error) {
	t.Helper()
	sess, err := a.Start(mech.Name())
	if err != nil {
		return nil, err
	}
	cs, msg, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatalf("%s client: %v", mech.Name(), err)
	}
	for step := 0; step < 10; step++ {
		out, done, err := sess.Step(msg)
		if err != nil {
			return sess, err
		}
		cdone, next, cerr := cs.Challenge(out)
		if cerr != nil {
			return sess, fmt.Errorf("%w: %v", errClient, cerr)
		}
		if done {
			if !cdone {
				t.Fatalf("%s: server done, client not", mech.Name())
			}
			return sess, nil
		}
		if cdone {
			t.Fatalf("%s: client done, server not", mech.Name())
		}
		msg = next
	}
	t.Fatalf("%s: no end after 10 steps", mech.Name())
	return nil, nil
}

// newMemStore returns a credential store over a fresh memcoord server,
// synced, and the server for writing to it directly.
func newMemStore(t testing.TB) (*CredentialStore, *memcoord.Server) {
	t.Helper()
	srv := memcoord.NewServer()
	st := NewCredentialStore(context.Background(), func(context.Context) (coord.Session, error) {
		return srv.Connect(memcoord.Config{}), nil
	}, nil)
	t.Cleanup(func() { _ = st.Close() })
	select {
	case <-st.Synced():
	case <-testenv.Context(t, 30*time.Second).Done():
		t.Fatal("store did not sync")
	}
	return st, srv
}

type kgosaslMechanism = kgosasl.Mechanism

func sha256Mech(a scram.Auth) kgosasl.Mechanism { return a.AsSha256Mechanism() }
func sha512Mech(a scram.Auth) kgosasl.Mechanism { return a.AsSha512Mechanism() }
