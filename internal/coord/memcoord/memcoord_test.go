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

// newDurable returns a server on a fresh directory, closed at cleanup.
func newDurable(t *testing.T) *Server {
	t.Helper()
	srv, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv
}

func TestConformance(t *testing.T) { runConformance(t, newServer) }

// A durable server keeps every semantic of the in-memory one.
func TestConformanceDurable(t *testing.T) { runConformance(t, newDurable) }

func runConformance(t *testing.T, open func(*testing.T) *Server) {
	servers := map[*testing.T]*Server{}
	coordtest.Run(t, func(t *testing.T) (coord.Session, func()) {
		t.Helper()
		srv, ok := servers[t]
		if !ok {
			srv = open(t)
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
