package memcoord

import (
	"testing"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/coordtest"
)

// newServer returns a fresh tree per test, as coordtest requires.
func newServer(t *testing.T) *Server {
	t.Helper()
	return NewServer()
}

func TestConformance(t *testing.T) {
	servers := map[*testing.T]*Server{}
	coordtest.Run(t, func(t *testing.T) (coord.Session, func()) {
		t.Helper()
		srv, ok := servers[t]
		if !ok {
			srv = newServer(t)
			servers[t] = srv
		}
		s := srv.Connect(Config{})
		t.Cleanup(func() { _ = s.Close() })
		return s, func() {
			if err := srv.Expire(s.ID()); err != nil {
				t.Errorf("expire: %v", err)
			}
		}
	})
}
