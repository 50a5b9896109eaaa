package zkcoord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/coordtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// testConfig keeps sessions short so that a leaked one goes away soon.
var testConfig = Config{SessionTimeout: 6 * time.Second, ConnectionTimeout: 10 * time.Second}

// uniqueChroot returns a fresh chroot for t under the test server and
// removes its tree when t ends.
func uniqueChroot(t *testing.T, servers string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	chroot := "/test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		admin, err := Connect(ctx, servers, testConfig)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer admin.Close()
		if err := deleteTree(ctx, admin, chroot); err != nil {
			t.Errorf("cleanup %s: %v", chroot, err)
		}
	})
	return chroot
}

func deleteTree(ctx context.Context, s coord.Session, p string) error {
	names, _, err := s.Children(ctx, p)
	if errors.Is(err, coord.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := deleteTree(ctx, s, coord.Join(p, n)); err != nil {
			return err
		}
	}
	if err := s.Delete(ctx, p, coord.AnyVersion); err != nil && !errors.Is(err, coord.ErrNoNode) {
		return err
	}
	return nil
}

// newSession connects to connect (servers plus chroot) and closes the
// session when t ends.
func newSession(t *testing.T, connect string) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	s, err := Connect(ctx, connect, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	addr := testenv.ZooKeeper(t)
	var mu sync.Mutex
	chroots := map[*testing.T]string{}
	coordtest.Run(t, func(t *testing.T) (coord.Session, func()) {
		t.Helper()
		mu.Lock()
		chroot, ok := chroots[t]
		if !ok {
			chroot = uniqueChroot(t, addr)
			chroots[t] = chroot
		}
		mu.Unlock()
		s := newSession(t, addr+chroot)
		return s, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Expire(ctx); err != nil {
				t.Errorf("expire: %v", err)
			}
		}
	})
}

func TestParseConnect(t *testing.T) {
	for _, c := range []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2,c/tributary", servers: []string{"a:1", "b:2", "c:2181"}, chroot: "/tributary"},
		{in: "a:1/x/y", servers: []string{"a:1"}, chroot: "/x/y"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "a:1/x/", bad: true},
		{in: "a:1,,b:2", bad: true},
		{in: "", bad: true},
		{in: "/chroot", bad: true},
	} {
		servers, chroot, err := ParseConnect(c.in)
		if c.bad {
			if !errors.Is(err, ErrBadConnect) {
				t.Errorf("ParseConnect(%q) error %v, want ErrBadConnect", c.in, err)
			}
			continue
		}
		if err != nil || !slices.Equal(servers, c.servers) || chroot != c.chroot {
			t.Errorf("ParseConnect(%q) = %v %q %v, want %v %q", c.in, servers, chroot, err, c.servers, c.chroot)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	if err := (Config{SessionTimeout: -1, ConnectionTimeout: -1}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "session") || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("negative timeouts: %v", err)
	}
	c := Config{SessionTimeout: 4 * time.Second}
	if c.connectionTimeout() != 4*time.Second || (Config{}).sessionTimeout() != 18*time.Second {
		t.Fatal("defaults: connection timeout follows session timeout, session defaults to 18s")
	}
}

func TestConnectUnavailable(t *testing.T) {
	start := time.Now()
	// Port 1 on loopback refuses connections.
	_, err := Connect(t.Context(), "127.0.0.1:1/chroot", Config{ConnectionTimeout: 700 * time.Millisecond})
	if !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error %q does not name the server", err)
	}
	if d := time.Since(start); d < 600*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about the 700ms connection timeout", d)
	}
}

func TestChroot(t *testing.T) {
	addr := testenv.ZooKeeper(t)
	base := uniqueChroot(t, addr)
	chroot := base + "/deep/tributary"
	s := newSession(t, addr+chroot)
	raw := newSession(t, addr)
	ctx := t.Context()
	if _, err := s.Create(ctx, "/brokers", []byte("b"), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	data, _, err := raw.Get(ctx, chroot+"/brokers")
	if err != nil || string(data) != "b" {
		t.Fatalf("node seen without chroot: %q %v", data, err)
	}
	p, err := s.Create(ctx, "/brokers/seq-", nil, coord.EphemeralSequential)
	if err != nil || p != "/brokers/seq-0000000000" {
		t.Fatalf("sequential name inside chroot = %q %v", p, err)
	}
	_, _, ch, err := s.ChildrenW(ctx, "/brokers")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(ctx, chroot+"/brokers/x", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev != (coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/brokers"}) {
			t.Fatalf("event %+v, want path inside the chroot", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	names, _, err := s.Children(ctx, "/")
	if err != nil || !slices.Equal(names, []string{"brokers"}) {
		t.Fatalf("chroot root children %v %v", names, err)
	}
	// A second session on the existing chroot works too.
	s2 := newSession(t, addr+chroot)
	if ok, _, err := s2.Exists(ctx, "/brokers/x"); !ok || err != nil {
		t.Fatalf("second session: %v %v", ok, err)
	}
}

// TestExpiredSessionStaysExpired checks that go-zookeeper does not slip a
// fresh session under an expired Session.
func TestExpiredSessionStaysExpired(t *testing.T) {
	addr := testenv.ZooKeeper(t)
	chroot := uniqueChroot(t, addr)
	s := newSession(t, addr+chroot)
	id := s.ID()
	if err := s.Expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(15 * time.Second)
	for expired := false; !expired; {
		select {
		case st := <-s.States():
			expired = st == coord.StateExpired
		case <-deadline:
			t.Fatal("no StateExpired")
		}
	}
	time.Sleep(1500 * time.Millisecond) // long enough for go-zookeeper to try a reconnect
	if got := s.conn.SessionID(); got != 0 {
		t.Fatalf("client holds session 0x%x after expiry of 0x%x", got, id)
	}
	if s.ID() != id {
		t.Fatalf("ID changed from %d to %d", id, s.ID())
	}
	_, err := s.Create(t.Context(), "/x", nil, coord.Persistent)
	if !errors.Is(err, coord.ErrSessionExpired) {
		t.Fatalf("create after expiry: %v", err)
	}
	// The owner's remedy: a new session.
	s2 := newSession(t, addr+chroot)
	if _, err := s2.Create(t.Context(), "/x", nil, coord.Ephemeral); err != nil {
		t.Fatal(err)
	}
}

// retryUnavailable repeats a write cut off by a failover, as callers must:
// its outcome is unknown, so it is retried only where that is safe.
func retryUnavailable(t *testing.T, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := fn()
		if err == nil {
			return
		}
		if !errors.Is(err, coord.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %v (retrying)", what, err)
		time.Sleep(100 * time.Millisecond)
	}
}

func FuzzParseConnect(f *testing.F) {
	for _, s := range []string{"a:1", "a:1,b:2/x", "a/x/y", "/x", ",", "a:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		servers, chroot, err := ParseConnect(in)
		if err != nil {
			return
		}
		if len(servers) == 0 {
			t.Fatalf("%q: no servers and no error", in)
		}
		if chroot != "" && coord.ValidatePath(chroot) != nil {
			t.Fatalf("%q: invalid chroot %q accepted", in, chroot)
		}
		again, chroot2, err := ParseConnect(strings.Join(servers, ",") + chroot)
		if err != nil || !slices.Equal(again, servers) || chroot2 != chroot {
			t.Fatalf("%q: reparse gave %v %q %v", in, again, chroot2, err)
		}
	})
}
