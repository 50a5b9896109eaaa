package partition

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
)

// offsetLog is a Log of which replication reads only the offsets.
type offsetLog struct {
	Log
	end    atomic.Int64
	closed atomic.Bool
}

func (l *offsetLog) Flush() error  { return nil }
func (l *offsetLog) Close() error  { l.closed.Store(true); return nil }
func (l *offsetLog) Delete() error { l.closed.Store(true); return nil }

func (l *offsetLog) EndOffset() int64   { return l.end.Load() }
func (l *offsetLog) StartOffset() int64 { return 0 }

// fakeCluster accepts every ISR write, reporting it on writes.
type fakeCluster struct {
	writes chan []int32
}

func (fakeCluster) Metadata() cluster.Snapshot { return cluster.Snapshot{Controller: -1} }
func (fakeCluster) IsShuttingDown(int32) bool  { return false }

func (c fakeCluster) AlterISR(_ context.Context, _ string, _, _ int32, isr []int32) (cluster.Partition, error) {
	c.writes <- slices.Clone(isr)
	return cluster.Partition{ISR: isr}, nil
}

type fakeMetrics struct{}

func (fakeMetrics) ObserveReplica(*Replica, cluster.Partition) {}
func (fakeMetrics) ObserveISR(*Replica, int, int)              {}
func (fakeMetrics) ISRChanged(string)                          {}
func (fakeMetrics) ObserveOffsets(*Replica)                    {}
func (fakeMetrics) Truncated()                                 {}
func (fakeMetrics) Forget(*Replica)                            {}

func newTestManager(t *testing.T) (*Manager, fakeCluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := fakeCluster{writes: make(chan []int32, 16)}
	m := NewManager(Deps{
		BrokerID: 1, Replication: config.Replication{LagTimeMax: time.Minute}, Logger: slog.New(slog.DiscardHandler),
		RateLog: func(slog.Level, string, string, ...any) {},
		Cluster: c, Metrics: fakeMetrics{},
		Shutdown: ctx, WG: &wg,
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m, c
}

func openTestReplica(t *testing.T, l *offsetLog) *Replica {
	t.Helper()
	r, err := Open(func(string, config.LogSettings) (Log, error) { return l, nil }, "t", 0, t.TempDir(), config.Topic{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestLeaderHighWatermarkAndISRExpand(t *testing.T) {
	m, c := newTestManager(t)
	l := &offsetLog{}
	l.end.Store(10)
	r := openTestReplica(t, l)
	m.Publish("t", []*Replica{r})

	// Leader of replicas 1, 2 with 2 out of sync: alone in the ISR, the
	// leader's high watermark is its log end.
	m.ApplyRole(r, cluster.Partition{ID: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}})
	if !r.Leading() || !r.SelfOnly() || r.HighWatermark() != 10 || r.LeaderEpoch() != 3 {
		t.Fatalf("leading %v, self only %v, high watermark %d, epoch %d", r.Leading(), r.SelfOnly(), r.HighWatermark(), r.LeaderEpoch())
	}
	if got := m.Leader("t", 0); got != r {
		t.Fatalf("Leader answered %p, want the replica", got)
	}
	w := NewWaiter()
	r.AddWaiter(w)
	defer r.RemoveWaiter(w)
	// A follower fetching at the log end joins the ISR; until the write is
	// known, it counts for the high watermark.
	if !m.FollowerFetched(r, 2, 10, 0) {
		t.Fatal("a follower's fetch was refused")
	}
	select {
	case isr := <-c.writes:
		if !slices.Equal(isr, []int32{1, 2}) {
			t.Fatalf("ISR written %v, want [1 2]", isr)
		}
	case <-time.After(time.Minute):
		t.Fatal("no ISR write")
	}
	// The written ISR applies when the write returns, waking the waiters.
	timeout := time.After(time.Minute)
	for r.ISRSize() != 2 {
		select {
		case <-w.C():
		case <-timeout:
			t.Fatalf("ISR %v after the write", r.ISR())
		}
	}
	// Appends past the follower: committed only once it fetched them.
	l.end.Store(15)
	r.Wake()
	short := m.WaitCommitted(context.Background(), time.Now().Add(10*time.Millisecond), map[*Replica]int64{r: 15})
	if !short[r] || r.HighWatermark() != 10 {
		t.Fatalf("committed without the follower: short %v, high watermark %d", short, r.HighWatermark())
	}
	done := make(chan map[*Replica]bool)
	go func() {
		done <- m.WaitCommitted(context.Background(), time.Now().Add(time.Minute), map[*Replica]int64{r: 15})
	}()
	m.FollowerFetched(r, 2, 15, 0)
	if short := <-done; len(short) != 0 || r.HighWatermark() != 15 {
		t.Fatalf("after the follower's fetch: short %v, high watermark %d", short, r.HighWatermark())
	}
	if lw, ok := r.LowWatermark(); !ok || lw != 0 {
		t.Fatalf("low watermark %d, %v", lw, ok)
	}
	// A follower that is not a replica is refused.
	if m.FollowerFetched(r, 3, 15, 0) {
		t.Fatal("a fetch from a non-replica was accepted")
	}
}

func TestFollowerHighWatermark(t *testing.T) {
	m, _ := newTestManager(t)
	l := &offsetLog{}
	l.end.Store(8)
	r := openTestReplica(t, l)
	m.ApplyRole(r, cluster.Partition{ID: 0, Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	if r.Leading() || r.SelfOnly() {
		t.Fatal("a follower leads")
	}
	r.FollowHighWatermark(20)
	if r.HighWatermark() != 8 {
		t.Fatalf("high watermark %d past the log end 8", r.HighWatermark())
	}
	r.LowerHighWatermark(5)
	if r.StoredHighWatermark() != 5 {
		t.Fatalf("high watermark %d after truncating to 5", r.StoredHighWatermark())
	}
	if m.FollowerFetched(r, 2, 8, 0) {
		t.Fatal("a follower accepted a follower's fetch")
	}
	m.Release(r, false)
	if !l.closed.Load() {
		t.Fatal("a released replica's log is open")
	}
	if m.Leader("t", 0) != nil {
		t.Fatal("an unpublished replica is served")
	}
}
