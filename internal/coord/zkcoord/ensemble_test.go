// This test fails a member over on purpose, so it runs in `make test`'s
// separate ensemble pass. It is built without -race: it was written when
// zkcoord used go-zookeeper/zk v1.0.4, whose data race on Conn.lastZxid
// (zk#35) a reconnect hits; the fork used now fixes that, but this test has
// not been run under the race detector with it.

//go:build !race

package zkcoord

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

func TestEnsembleMemberDown(t *testing.T) {
	addrs, _ := testenv.ZooKeeperEnsemble(t)
	servers := strings.Join(addrs, ",")
	chroot := uniqueChroot(t, servers)
	s := newSession(t, servers+chroot)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := s.Create(ctx, "/brokers", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/brokers/1", []byte("one"), coord.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := s.ChildrenW(ctx, "/brokers")
	if err != nil {
		t.Fatal(err)
	}
	// Stop the member this session talks to, forcing a failover that must
	// keep the session, its ephemeral node and its watch.
	member := slices.Index(addrs, s.Server()) + 1
	if member == 0 {
		t.Fatalf("connected to %q, not one of %v", s.Server(), addrs)
	}
	t.Logf("stopping ensemble member %d (%s), which the session is connected to", member, s.Server())
	testenv.ControlEnsemble(t, "stop", member)
	t.Cleanup(func() { testenv.ControlEnsemble(t, "start", member) })

	other := newSession(t, servers+chroot)
	retryUnavailable(t, "create /brokers/2", func() error {
		_, err := other.Create(ctx, "/brokers/2", []byte("two"), coord.Persistent)
		if errors.Is(err, coord.ErrNodeExists) {
			return nil // an earlier attempt got through
		}
		return err
	})
	select {
	case ev := <-ch:
		if ev != (coord.Event{Type: coord.EventNodeChildrenChanged, Path: "/brokers"}) {
			t.Fatalf("watch across failover: %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not fire across the failover")
	}
	names, _, err := s.Children(ctx, "/brokers")
	if err != nil || !slices.Equal(names, []string{"1", "2"}) {
		t.Fatalf("children after failover %v %v (ephemeral must survive)", names, err)
	}
	if s.Server() == addrs[member-1] {
		t.Fatalf("still reports the stopped member %s", s.Server())
	}
	retryUnavailable(t, "set /brokers/1", func() error {
		_, err := s.Set(ctx, "/brokers/1", []byte("one again"), coord.AnyVersion)
		return err
	})
	// other may be connected to a server that has not applied the write
	// yet (ZooKeeper's reads are only sequentially consistent per session):
	// wait for it, bounded.
	var data []byte
	var st coord.Stat
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		data, st, err = other.Get(ctx, "/brokers/1")
		if err == nil && string(data) == "one again" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("get after failover %q %+v %v", data, st, err)
		}
	}
	if st.EphemeralOwner != s.ID() {
		t.Fatalf("get after failover: owner 0x%x, want the failed-over session 0x%x", st.EphemeralOwner, s.ID())
	}
	// The failover shows on States as a disconnection and a reconnection
	// of the same session.
	var states []coord.SessionState
	for len(s.States()) > 0 {
		states = append(states, <-s.States())
	}
	want := []coord.SessionState{coord.StateConnected, coord.StateDisconnected, coord.StateConnected}
	if !slices.Equal(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
}
