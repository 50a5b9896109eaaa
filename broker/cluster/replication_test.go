package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// memEnv is a memcoord cluster for the tests that need no real ZooKeeper.
func memEnv(t *testing.T) *env { return newEnv(t, backends[0]) }

// joinWith adds a member with a changed config and, when wrap is not nil,
// sessions wrapped by it.
func (e *env) joinWith(t *testing.T, id int32, change func(*Config), wrap func(coord.Session) coord.Session) *Member {
	t.Helper()
	cfg := e.config(id)
	if change != nil {
		change(&cfg)
	}
	connect := e.factory
	if wrap != nil {
		connect = func(ctx context.Context) (coord.Session, error) {
			s, err := e.factory(ctx)
			if err != nil {
				return nil, err
			}
			return wrap(s), nil
		}
	}
	m, err := Join(ctxFor(t), connect, cfg)
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

// partitionIs returns a condition on one partition's leader and ISR.
func partitionIs(topic string, p, leader int32, isr ...int32) func(Snapshot) bool {
	return func(s Snapshot) bool {
		part, ok := s.Partition(topic, p)
		return ok && part.Leader == leader && slices.Equal(part.ISR, isr)
	}
}

// TestElectionAndAlterISR (memcoord and ZooKeeper): a new partition's ISR
// is its live replicas; the leader's ISR shrink reaches every member; when
// the leader dies, the first ISR member in assignment order leads, not the
// first live replica; a deposed leader's AlterISR is fenced.
func TestElectionAndAlterISR(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "r3", "", map[int32][]int32{0: {2, 3, 1}}, nil))
		var epoch int32
		for _, m := range ms {
			snap := await(t, m, "r3 led by 2 with the full ISR", partitionIs("r3", 0, 2, 2, 3, 1))
			p, _ := snap.Partition("r3", 0)
			epoch = p.LeaderEpoch
		}
		// Broker 3 falls behind: the leader drops it.
		got, err := ms[1].AlterISR(ctxFor(t), "r3", 0, epoch, []int32{2, 1})
		must(t, err)
		if got.Leader != 2 || got.LeaderEpoch != epoch || !slices.Equal(got.ISR, []int32{2, 1}) {
			t.Fatalf("AlterISR returned %+v", got)
		}
		// The caller's own Metadata shows it on return, no waiting.
		if p, _ := ms[1].Metadata().Partition("r3", 0); !slices.Equal(p.ISR, []int32{2, 1}) || p.stateVersion != got.stateVersion {
			t.Errorf("caller's metadata after AlterISR: %+v", p)
		}
		for _, m := range ms {
			await(t, m, "the shrunk ISR", partitionIs("r3", 0, 2, 2, 1))
		}
		data, _ := e.get(t, statePath("r3", 0))
		if want := `{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}`; string(data) != want {
			t.Errorf("state node %s, want %s", data, want)
		}
		// A follower is not the leader: fenced.
		_, err = ms[0].AlterISR(ctxFor(t), "r3", 0, epoch, []int32{1, 2})
		wantErr(t, err, ErrFenced, "AlterISR by follower 1")
		// Broker 3 is live and before 1 in the assignment, but not in sync.
		e.crash(t, ms[1])
		for _, m := range []*Member{ms[0], ms[2]} {
			snap := await(t, m, "1 leads r3 after 2 died", partitionIs("r3", 0, 1, 1))
			p, _ := snap.Partition("r3", 0)
			if p.LeaderEpoch != epoch+1 || !slices.Equal(p.OfflineReplicas, []int32{2}) {
				t.Errorf("member %d: %+v", m.ID(), p)
			}
		}
		// The new leader expands the ISR with 3; the old epoch is fenced.
		_, err = ms[0].AlterISR(ctxFor(t), "r3", 0, epoch, []int32{1, 3})
		wantErr(t, err, ErrFenced, "AlterISR at the old epoch")
		got, err = ms[0].AlterISR(ctxFor(t), "r3", 0, epoch+1, []int32{1, 3})
		must(t, err)
		if !slices.Equal(got.ISR, []int32{1, 3}) || got.LeaderEpoch != epoch+1 {
			t.Errorf("expansion returned %+v", got)
		}
		await(t, ms[2], "the expanded ISR", partitionIs("r3", 0, 1, 1, 3))
	})
}

// TestAlterISRErrors: bad ISRs and unknown partitions are refused before
// any write.
func TestAlterISRErrors(t *testing.T) {
	e := memEnv(t)
	ms := e.joinAll(t, 1, 2)
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {1, 2}}, nil))
	await(t, ms[0], "t led by 1", partitionIs("t", 0, 1, 1, 2))
	_, before := e.get(t, statePath("t", 0))
	for _, isr := range [][]int32{{2}, {1, 1}, {1, 3}, {}} {
		_, err := ms[0].AlterISR(ctxFor(t), "t", 0, 0, isr)
		wantErr(t, err, ErrInvalidISR, fmt.Sprint("ISR ", isr))
	}
	_, err := ms[0].AlterISR(ctxFor(t), "t", 1, 0, []int32{1})
	wantErr(t, err, ErrUnknownTopic, "partition 1")
	_, err = ms[0].AlterISR(ctxFor(t), "nope", 0, 0, []int32{1})
	wantErr(t, err, ErrUnknownTopic, "topic nope")
	// An unchanged ISR is not written.
	got, err := ms[0].AlterISR(ctxFor(t), "t", 0, 0, []int32{1, 2})
	must(t, err)
	if _, after := e.get(t, statePath("t", 0)); after.Version != before.Version || got.stateVersion != before.Version {
		t.Errorf("state version %d -> %d (returned %d): nothing should be written", before.Version, after.Version, got.stateVersion)
	}
}

// setHookSession runs a hook before the first Set of a path.
type setHookSession struct {
	coord.Session
	path string
	once sync.Once
	hook func()
}

func (s *setHookSession) Set(ctx context.Context, path string, data []byte, version int32) (coord.Stat, error) {
	if path == s.path {
		s.once.Do(s.hook)
	}
	return s.Session.Set(ctx, path, data, version)
}

// TestAlterISRRetriesOnConflict: a write between AlterISR's read and its
// compare-and-set that keeps leader and epoch (the leader's own earlier
// write, answered late) makes AlterISR read again and write its ISR.
func TestAlterISRRetriesOnConflict(t *testing.T) {
	e := memEnv(t)
	ms := e.joinAll(t, 1, 2, 3)
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {1, 2, 3}}, nil))
	await(t, ms[0], "t led by 1", partitionIs("t", 0, 1, 1, 2, 3))
	_, before := e.get(t, statePath("t", 0))
	path := statePath("t", 0)
	s := &setHookSession{Session: ms[0].session, path: path, hook: func() {
		_, _, err := alterISR(ctxFor(t), e.admin, 1, "t", 0, 0, []int32{1, 3})
		must(t, err)
	}}
	rec, version, err := alterISR(ctxFor(t), s, 1, "t", 0, 0, []int32{1, 2})
	must(t, err)
	if !slices.Equal(rec.ISR, []int32{1, 2}) || version != before.Version+2 {
		t.Errorf("wrote %+v at version %d, want ISR [1 2] at version %d", rec, version, before.Version+2)
	}
	await(t, ms[2], "the retried ISR", partitionIs("t", 0, 1, 1, 2))
}

// multiHookSession runs a hook, when one is set, before each Multi; an
// error from it fails the Multi.
type multiHookSession struct {
	coord.Session
	hook atomic.Pointer[func(ops []coord.Op) error]
}

func (s *multiHookSession) Multi(ctx context.Context, ops ...coord.Op) error {
	if h := s.hook.Load(); h != nil {
		if err := (*h)(ops); err != nil {
			return err
		}
	}
	return s.Session.Multi(ctx, ops...)
}

func (s *multiHookSession) setHook(h func(ops []coord.Op) error) { s.hook.Store(&h) }

// TestControllerWriteConflict: the leader shrinks the ISR just before the
// controller writes the same state node (to drop a dead follower). The
// controller's write is conditional on the version it read, so it fails,
// and the controller redoes it on the leader's ISR: the result has both
// changes. An unconditional write would have put the shrunk-out broker
// back.
func TestControllerWriteConflict(t *testing.T) {
	e := memEnv(t)
	var hooked *multiHookSession
	c := e.joinWith(t, 1, nil, func(s coord.Session) coord.Session {
		hooked = &multiHookSession{Session: s}
		return hooked
	})
	awaitController(t, c)
	m2, m3 := e.join(t, 2), e.join(t, 3)
	await(t, c, "3 brokers", func(s Snapshot) bool { return len(s.Brokers) == 3 })
	must(t, c.CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {1, 2, 3}}, nil))
	await(t, c, "t led by 1", partitionIs("t", 0, 1, 1, 2, 3))
	var fired atomic.Int32
	hooked.setHook(func(ops []coord.Op) error {
		if !slices.ContainsFunc(ops, func(op coord.Op) bool { return op.Kind == coord.OpSet && op.Path == statePath("t", 0) }) ||
			fired.Add(1) != 1 {
			return nil
		}
		// Broker 2 fell behind; leader 1 drops it at epoch 0.
		if _, _, err := alterISR(context.Background(), e.admin, 1, "t", 0, 0, []int32{1, 3}); err != nil {
			t.Errorf("leader's AlterISR in the hook: %v", err)
		}
		return nil
	})
	e.crash(t, m3)
	snap := await(t, m2, "3 dropped after 2", partitionIs("t", 0, 1, 1))
	if p, _ := snap.Partition("t", 0); p.LeaderEpoch != 1 {
		t.Errorf("partition %+v: want leader epoch 1 (one controller write)", p)
	}
	if n := fired.Load(); n != 2 {
		t.Fatalf("the controller wrote t-0 %d times, want 2 (the conflict, then the redo)", n)
	}
}

// TestUncleanElection: with no live ISR member a topic that allows unclean
// election gets the first live replica as leader; the default keeps it
// offline with its last ISR.
func TestUncleanElection(t *testing.T) {
	e := memEnv(t)
	ms := e.joinAll(t, 1, 2, 3)
	assignment := map[int32][]int32{0: {2, 3}}
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "clean", "", assignment, nil))
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "dirty", "", assignment, map[string]string{UncleanLeaderElectionConfig: "true"}))
	for _, topic := range []string{"clean", "dirty"} {
		await(t, ms[1], topic+" led by 2", partitionIs(topic, 0, 2, 2, 3))
		_, err := ms[1].AlterISR(ctxFor(t), topic, 0, 0, []int32{2})
		must(t, err)
	}
	e.crash(t, ms[1])
	await(t, ms[2], "unclean election of 3", partitionIs("dirty", 0, 3, 3))
	snap := await(t, ms[2], "clean partition offline", partitionIs("clean", 0, -1, 2))
	if p, _ := snap.Partition("clean", 0); p.LeaderEpoch != 1 {
		t.Errorf("clean-0 %+v: want leader epoch 1", p)
	}
	// Broker 2 returns: the clean partition is its again, ISR as kept.
	e.join(t, 2)
	await(t, ms[2], "2 leads clean again", partitionIs("clean", 0, 2, 2))
}

// TestControlledShutdown: a broker announcing its shutdown loses every
// leadership another ISR member can take and leaves every ISR; the call
// returns once all that is in its Metadata. A partition only it can lead stays
// its. The controller shutting down moves its own partitions the same way.
func TestControlledShutdown(t *testing.T) {
	e := memEnv(t)
	ms := e.joinAll(t, 1, 2, 3)
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "r3", "",
		map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}, 3: {2, 1, 3}}, nil))
	must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "solo", "", map[int32][]int32{0: {2}}, nil))
	for _, m := range ms {
		await(t, m, "leaders", func(s Snapshot) bool {
			return leadersAre("r3", []int32{1, 2, 3, 2})(s) && leadersAre("solo", []int32{2})(s)
		})
	}
	must(t, ms[1].ControlledShutdown(ctxFor(t)))
	snap := ms[1].Metadata()
	if !snap.IsShuttingDown(2) || !slices.Equal(snap.ShuttingDown, []int32{2}) {
		t.Fatalf("shutting down %v", snap.ShuttingDown)
	}
	want := map[int32][]int32{0: {1, 3}, 1: {3, 1}, 2: {3, 1}, 3: {1, 3}}
	for _, p := range snap.Topics["r3"].Partitions {
		if p.Leader == 2 || !slices.Equal(p.ISR, want[p.ID]) || p.LeaderEpoch != 1 {
			t.Errorf("r3-%d after broker 2's controlled shutdown: %+v, want ISR %v", p.ID, p, want[p.ID])
		}
	}
	if p, _ := snap.Partition("solo", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Errorf("solo-0 %+v: its only replica keeps it", p)
	}
	if _, st := e.get(t, shuttingDownBrokerPath(2)); st.EphemeralOwner != ms[1].session.ID() {
		t.Errorf("shutting-down node owned by 0x%x", st.EphemeralOwner)
	}
	await(t, ms[0], "the controller's view", func(s Snapshot) bool {
		return s.IsShuttingDown(2) && leadersAre("r3", []int32{1, 3, 3, 1})(s)
	})
	must(t, ms[1].Close())
	await(t, ms[2], "2 gone", func(s Snapshot) bool {
		return len(s.ShuttingDown) == 0 && partitionIs("solo", 0, -1, 2)(s)
	})
	// The controller itself shuts down.
	must(t, ms[0].ControlledShutdown(ctxFor(t)))
	snap = ms[0].Metadata()
	for _, p := range snap.Topics["r3"].Partitions {
		if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
			t.Errorf("r3-%d after broker 1's shutdown: %+v", p.ID, p)
		}
	}
}

// TestControlledShutdownTimesOut: while the controller cannot write, the
// call ends with ctx and names what is still led; once it can, the call
// succeeds.
func TestControlledShutdownTimesOut(t *testing.T) {
	e := memEnv(t)
	var hooked *multiHookSession
	c := e.joinWith(t, 1, nil, func(s coord.Session) coord.Session {
		hooked = &multiHookSession{Session: s}
		return hooked
	})
	awaitController(t, c)
	m2 := e.join(t, 2)
	await(t, c, "2 brokers", func(s Snapshot) bool { return len(s.Brokers) == 2 })
	must(t, c.CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {2, 1}}, nil))
	await(t, m2, "t led by 2", partitionIs("t", 0, 2, 2, 1))
	hooked.setHook(func([]coord.Op) error { return fmt.Errorf("test: %w", coord.ErrUnavailable) })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := m2.ControlledShutdown(ctx)
	wantErr(t, err, context.DeadlineExceeded, "controlled shutdown without a working controller")
	if !strings.Contains(err.Error(), "still leading or in the ISR of [t-0]") {
		t.Errorf("error does not name the partition: %v", err)
	}
	hooked.setHook(func([]coord.Op) error { return nil })
	must(t, m2.ControlledShutdown(ctxFor(t)))
	if p, _ := m2.Metadata().Partition("t", 0); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Errorf("t-0 %+v", p)
	}
}

// TestPreferredLeaderReturn: a preferred replica back in the ISR gets its
// leadership back, at most once per check interval; with the rebalance
// off it does not.
func TestPreferredLeaderReturn(t *testing.T) {
	const interval = 1500 * time.Millisecond
	t.Run("on", func(t *testing.T) {
		e := memEnv(t)
		c := e.joinWith(t, 1, func(cfg *Config) {
			cfg.AutoLeaderRebalance = true
			cfg.LeaderImbalanceCheckInterval = interval
		}, nil)
		awaitController(t, c)
		m2, m3 := e.join(t, 2), e.join(t, 3)
		must(t, c.CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {2, 1}, 1: {3, 1}}, nil))
		await(t, c, "preferred leaders", leadersAre("t", []int32{2, 3}))
		e.crash(t, m2)
		e.crash(t, m3)
		await(t, c, "1 leads both", func(s Snapshot) bool {
			return partitionIs("t", 0, 1, 1)(s) && partitionIs("t", 1, 1, 1)(s)
		})
		e.join(t, 2)
		e.join(t, 3)
		await(t, c, "2 and 3 back", func(s Snapshot) bool { return len(s.Brokers) == 3 })
		// Leader 1 finds 2 caught up: the preferred leader returns at once
		// (no move happened yet in this controller's term).
		before := time.Now() // no later than the first move
		_, err := c.AlterISR(ctxFor(t), "t", 0, 1, []int32{1, 2})
		must(t, err)
		await(t, c, "2 leads t-0 again", partitionIs("t", 0, 2, 1, 2))
		_, err = c.AlterISR(ctxFor(t), "t", 1, 1, []int32{1, 3})
		must(t, err)
		snap := await(t, c, "3 leads t-1 again", partitionIs("t", 1, 3, 1, 3))
		if waited := time.Since(before); waited < interval {
			t.Errorf("second preferred move after %v, want at least the interval %v after the first", waited, interval)
		}
		if p, _ := snap.Partition("t", 1); p.LeaderEpoch != 2 {
			t.Errorf("t-1 %+v: want leader epoch 2", p)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := memEnv(t)
		ms := e.joinAll(t, 1, 2)
		must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "t", "", map[int32][]int32{0: {2, 1}}, nil))
		await(t, ms[0], "2 leads", partitionIs("t", 0, 2, 2, 1))
		e.crash(t, ms[1])
		await(t, ms[0], "1 leads", partitionIs("t", 0, 1, 1))
		e.join(t, 2)
		// The controller (1) must see 2 live before 2 enters the ISR: one
		// that still saw it dead would take it out again.
		await(t, ms[0], "2 back", func(s Snapshot) bool { return len(s.Brokers) == 2 })
		_, err := ms[0].AlterISR(ctxFor(t), "t", 0, 1, []int32{1, 2})
		must(t, err)
		// Once the controller has elected the leader of a topic created
		// after the ISR change, it has reconciled a snapshot holding it.
		must(t, ms[0].CreateTopicWithAssignment(ctxFor(t), "marker", "", map[int32][]int32{0: {1}}, nil))
		snap := await(t, ms[0], "marker led", leadersAre("marker", []int32{1}))
		if !partitionIs("t", 0, 1, 1, 2)(snap) {
			t.Errorf("leadership moved with auto.leader.rebalance.enable off:\n%s", dump(snap))
		}
	})
}
