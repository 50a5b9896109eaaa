package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// waitTimeout bounds every wait for the cluster to converge. ZooKeeper
// reports an expiry to the expired client only when it reconnects, hence
// the margin.
const waitTimeout = 20 * time.Second

// zkTestConfig keeps sessions short so that a leaked one goes soon.
var zkTestConfig = zkcoord.Config{SessionTimeout: 6 * time.Second, ConnectionTimeout: 10 * time.Second}

type (
	// connectFunc opens a session on a backend's tree.
	connectFunc = coord.SessionFactory
	// expireFunc ends a session as a ZooKeeper session expiry does.
	expireFunc = func(t *testing.T, s coord.Session)
)

// backend is a coordination service the shared test bodies run against.
type backend struct {
	name string
	// open returns a factory of sessions on one tree private to t.
	open func(t *testing.T) (connectFunc, expireFunc)
}

var backends = []backend{
	{"memcoord", func(t *testing.T) (connectFunc, expireFunc) {
		srv := memcoord.NewServer()
		connect := func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil }
		expire := func(t *testing.T, s coord.Session) {
			t.Helper()
			if err := srv.Expire(s.ID()); err != nil {
				t.Fatalf("expire session %d: %v", s.ID(), err)
			}
		}
		return connect, expire
	}},
	{"zookeeper", func(t *testing.T) (connectFunc, expireFunc) {
		return zkBackend(t, testenv.ZooKeeper(t))
	}},
}

// zkBackend gives t a fresh chroot on the servers and removes it at the end.
func zkBackend(t *testing.T, servers string) (connectFunc, expireFunc) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	chroot := "/cluster-test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		admin, err := zkcoord.Connect(ctx, servers, zkTestConfig)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer admin.Close()
		ops, err := deleteTreeOps(ctx, admin, chroot)
		if err == nil {
			err = admin.Multi(ctx, ops...)
		}
		if err != nil {
			t.Errorf("cleanup %s: %v", chroot, err)
		}
	})
	connect := func(ctx context.Context) (coord.Session, error) {
		return zkcoord.Connect(ctx, servers+chroot, zkTestConfig)
	}
	expire := func(t *testing.T, s coord.Session) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// A server may drop the connection before answering closeSession
		// (seen on a follower); a second try finds the session gone and
		// succeeds, or reports what is wrong.
		err := s.(*zkcoord.Session).Expire(ctx)
		if err != nil {
			t.Logf("expire session 0x%x: %v; trying again", s.ID(), err)
			err = s.(*zkcoord.Session).Expire(ctx)
		}
		if err != nil {
			t.Fatalf("expire session 0x%x: %v", s.ID(), err)
		}
	}
	return connect, expire
}

// forEachBackend runs body as a subtest per backend.
func forEachBackend(t *testing.T, body func(t *testing.T, env *env)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { body(t, newEnv(t, b)) })
	}
}

// env is one test's cluster: members joined through a shared factory, an
// admin session for reading the raw nodes, and a switch that makes
// reconnects fail (a broker cut off from the coordination service).
type env struct {
	t        *testing.T
	connect  coord.SessionFactory
	expireFn func(t *testing.T, s coord.Session)
	admin    coord.Session
	refuse   atomic.Bool

	mu       sync.Mutex
	sessions []coord.Session
}

func newEnv(t *testing.T, b backend) *env {
	t.Helper()
	connect, expire := b.open(t)
	e := &env{t: t, connect: connect, expireFn: expire}
	e.admin = e.session(t)
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, s := range e.sessions {
			_ = s.Close()
		}
	})
	return e
}

func (e *env) session(t *testing.T) coord.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	s, err := e.factory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// factory is the SessionFactory members get; it records sessions for
// cleanup and fails while refuse is set.
func (e *env) factory(ctx context.Context) (coord.Session, error) {
	if e.refuse.Load() {
		return nil, fmt.Errorf("test: coordination service unreachable: %w", coord.ErrUnavailable)
	}
	s, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.sessions = append(e.sessions, s)
	e.mu.Unlock()
	return s, nil
}

func (e *env) config(id int32) Config {
	return Config{
		BrokerID:     id,
		Port:         9000 + id,
		Rack:         fmt.Sprintf("rack-%d", id%2),
		Logger:       testenv.Logger(e.t, slog.LevelInfo).With("member", id),
		Now:          fixedNow,
		RetryBackoff: 50 * time.Millisecond,
	}
}

// join adds a member with id and closes it when the test ends.
func (e *env) join(t *testing.T, id int32) *Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	m, err := Join(ctx, e.factory, e.config(id))
	if err != nil {
		t.Fatalf("join %d: %v", id, err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close member %d: %v", id, err)
		}
	})
	return m
}

// joinAll joins members with ids in order, the first becoming controller
// before the others join, so that tests know who controls.
func (e *env) joinAll(t *testing.T, ids ...int32) []*Member {
	t.Helper()
	ms := []*Member{e.join(t, ids[0])}
	awaitController(t, ms[0])
	for _, id := range ids[1:] {
		ms = append(ms, e.join(t, id))
	}
	for _, m := range ms {
		await(t, m, fmt.Sprintf("all %d brokers and controller %d visible", len(ids), ids[0]), func(s Snapshot) bool {
			return len(s.Brokers) == len(ids) && s.Controller == ids[0]
		})
	}
	return ms
}

// crash stops m as a SIGKILL would (no resign, no session close) and then
// has the coordination service expire its session.
func (e *env) crash(t *testing.T, m *Member) {
	t.Helper()
	m.halt()
	e.expireFn(t, m.session)
}

// expire ends m's current session as a ZooKeeper expiry does.
func (e *env) expire(t *testing.T, m *Member) coord.Session {
	t.Helper()
	m.mu.Lock()
	s := m.session
	m.mu.Unlock()
	e.expireFn(t, s)
	return s
}

func (e *env) get(t *testing.T, path string) ([]byte, coord.Stat) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	data, st, err := e.admin.Get(ctx, path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data, st
}

func (e *env) exists(t *testing.T, path string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	ok, _, err := e.admin.Exists(ctx, path)
	if err != nil {
		t.Fatalf("exists %s: %v", path, err)
	}
	return ok
}

// await waits (bounded) until cond holds for m's metadata.
func await(t *testing.T, m *Member, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	snap, err := m.AwaitMetadata(ctx, cond)
	if err != nil {
		t.Fatalf("member %d: waiting for %s: %v\nlast metadata:\n%s", m.ID(), what, err, dump(snap))
	}
	return snap
}

// leaders returns topic's leader per partition; nil if the topic is
// missing.
func leaders(s Snapshot, topic string) []int32 {
	tp, ok := s.Topics[topic]
	if !ok {
		return nil
	}
	out := make([]int32, len(tp.Partitions))
	for i, p := range tp.Partitions {
		out[i] = p.Leader
	}
	return out
}

// leadersAre returns a condition: topic's leaders equal want.
func leadersAre(topic string, want []int32) func(Snapshot) bool {
	return func(s Snapshot) bool { return slices.Equal(leaders(s, topic), want) }
}

func dump(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  controller %d epoch %d session 0x%x deleting %v\n", s.Controller, s.ControllerEpoch, s.session, s.deleting)
	for _, br := range s.Brokers {
		fmt.Fprintf(&b, "  broker %+v\n", br)
	}
	for _, n := range s.TopicNames() {
		tp := s.Topics[n]
		fmt.Fprintf(&b, "  topic %s deleting=%v configs=%v\n", n, tp.Deleting, tp.Configs)
		for _, p := range tp.Partitions {
			fmt.Fprintf(&b, "    %d leader %d epoch %d replicas %v isr %v (v%d)\n",
				p.ID, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.stateVersion)
		}
	}
	return b.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// awaitController waits (bounded) until m is the controller.
func awaitController(t *testing.T, m *Member) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, fmt.Sprintf("member %d to become controller", m.ID()), func() (bool, string) {
		return m.IsController(), fmt.Sprintf("controller is %d", m.Metadata().Controller)
	})
}
