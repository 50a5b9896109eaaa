// This test stops ensemble members, so it runs in `make test`'s separate
// ensemble pass, one package at a time. It is built without -race: it was
// written when zkcoord used go-zookeeper/zk v1.0.4, whose data race on
// Conn.lastZxid (zk#35) a reconnect hits; the fork zkcoord uses now fixes
// that, but this test has not been run under the race detector with it.

//go:build !race

package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestEnsembleMemberDown: with one of three ZooKeeper servers stopped the
// cluster keeps serving metadata, electing leaders and creating topics.
func TestEnsembleMemberDown(t *testing.T) {
	addrs, _ := testenv.ZooKeeperEnsemble(t)
	e := newEnv(t, backend{name: "ensemble", open: func(t *testing.T) (connectFunc, expireFunc) {
		return zkBackend(t, strings.Join(addrs, ","))
	}})
	ms := e.joinAll(t, 1, 2, 3)
	must(t, ms[0].CreateTopic(ctxFor(t), "before", 6, 1, nil))
	for _, m := range ms {
		await(t, m, "leaders of before", leadersAre("before", []int32{1, 2, 3, 1, 2, 3}))
	}

	// Stop the server member 2's session is connected to, so that at least
	// one broker has to move its session to another server.
	down := serverIndex(t, addrs, ms[1]) + 1
	stopped := true
	testenv.ControlEnsemble(t, "stop", down)
	t.Cleanup(func() {
		if stopped {
			testenv.ControlEnsemble(t, "start", down)
		}
	})
	createRetrying(t, ms[1], "during", 6)
	for _, m := range ms {
		snap := await(t, m, "leaders of during", leadersAre("during", []int32{1, 2, 3, 1, 2, 3}))
		if len(snap.Brokers) != 3 || !leadersAre("before", []int32{1, 2, 3, 1, 2, 3})(snap) {
			t.Fatalf("member %d with server %d down:\n%s", m.ID(), down, dump(snap))
		}
	}
	// A broker failure is still handled with the server down.
	e.crash(t, ms[2])
	await(t, ms[0], "broker 3's partitions offline", leadersAre("before", []int32{1, 2, -1, 1, 2, -1}))

	testenv.ControlEnsemble(t, "start", down)
	stopped = false
	createRetrying(t, ms[0], "after", 2)
	await(t, ms[1], "leaders of after", leadersAre("after", []int32{1, 2}))
}

// serverIndex returns the index in addrs of the server m's session uses.
func serverIndex(t *testing.T, addrs []string, m *Member) int {
	t.Helper()
	m.mu.Lock()
	s := m.session
	m.mu.Unlock()
	server := s.(interface{ Server() string }).Server()
	for i, a := range addrs {
		if a == server {
			return i
		}
	}
	t.Fatalf("session server %s is not one of %v", server, addrs)
	return -1
}

// createRetrying creates a topic, retrying while a write is cut off by the
// stopped server (whose outcome is unknown: ErrTopicExists then means it
// took effect).
func createRetrying(t *testing.T, m *Member, topic string, partitions int32) {
	t.Helper()
	ctx := ctxFor(t)
	retried := false
	for {
		err := m.CreateTopic(ctx, topic, partitions, 1, nil)
		switch {
		case err == nil, retried && errors.Is(err, ErrTopicExists):
			return
		case errors.Is(err, coord.ErrUnavailable) && ctx.Err() == nil:
			retried = true
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("create %s: %v", topic, err)
		}
	}
}
