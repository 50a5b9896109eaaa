package partition

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/broker/config"
)

// Replica is this broker's replica of one topic partition: its log, the
// fetch and produce waiters watching it, and its part in replication (its
// role, the high watermark and, on the leader, the followers' positions
// and the ISR; replication.go).
type Replica struct {
	topic string
	index int32
	dir   string
	log   Log
	// settings are what log was opened with; a change reopens it.
	settings config.LogSettings
	// conf is the topic's effective configuration, replaced when the
	// topic's overrides change.
	conf atomic.Pointer[config.Topic]
	// identity is the overrides last recorded in dir; reconciler-owned.
	identity string

	mu      sync.Mutex
	waiters map[*Waiter]struct{}

	// isLeader and selfOnly (leader and only in-sync replica) are read on
	// every request without a lock; hw is the high watermark, meaningful
	// unless selfOnly; rs is the rest, under rmu.
	isLeader atomic.Bool
	selfOnly atomic.Bool
	hw       atomic.Int64
	rmu      sync.Mutex
	rs       replicaState
}

// followerState is what a leader knows of one follower, from its fetches.
type followerState struct {
	// leo is the offset of the follower's last fetch: its log end offset;
	// -1 until it fetched under the current leadership.
	leo int64
	// lastCaughtUp is the last time the follower was known to have every
	// record the leader had (Kafka's lastCaughtUpTimeMs).
	lastCaughtUp time.Time
	// lastFetch and lastFetchLeaderLEO are the time of the follower's
	// previous fetch and the leader's log end offset then: a fetch that
	// reaches that offset proves the follower was caught up at that time.
	lastFetch          time.Time
	lastFetchLeaderLEO int64
	// logStart is the follower's log start offset from its last fetch
	// (DeleteRecords waits for it); -1 until then.
	logStart int64
}

// replicaState is guarded by Replica.rmu.
type replicaState struct {
	leader   bool
	leaderID int32
	epoch    int32
	replicas []int32
	isr      []int32
	// epochStart is the leader's log end offset when it took epoch: a
	// follower joins the ISR only once it has everything before it.
	epochStart int64
	followers  map[int32]*followerState
	// altering is set while an ISR change of this partition is being
	// written, so that at most one is in flight; pending is the ISR being
	// written. Until the write is known, the high watermark counts on every
	// replica of either set (Kafka's maximal ISR): a follower being added
	// may be in the ISR the controller elects from before the leader learns
	// that the write succeeded, so no record may be acknowledged without it.
	altering bool
	pending  []int32
	// stateVersion is the version of the partition state (cluster
	// Partition.StateVersion) the ISR above comes from.
	stateVersion int32
}

// Open opens the log of partition index of topic in dir with the topic's
// configuration, as a replica with no role yet (neither leading nor
// following) whose high watermark starts at hw, never past its log end.
func Open(open Opener, topic string, index int32, dir string, tc config.Topic, hw int64) (*Replica, error) {
	l, err := open(dir, tc.Log)
	if err != nil {
		return nil, fmt.Errorf("broker: opening partition %s-%d: %w", topic, index, err)
	}
	r := &Replica{topic: topic, index: index, dir: dir, log: l, settings: tc.Log, waiters: map[*Waiter]struct{}{}}
	r.conf.Store(&tc)
	r.rs.epoch = -1
	r.rs.leaderID = -1
	r.hw.Store(min(hw, l.EndOffset()))
	return r, nil
}

// Topic is the replica's topic name.
func (r *Replica) Topic() string { return r.topic }

// Partition is the replica's partition index in its topic.
func (r *Replica) Partition() int32 { return r.index }

// Dir is the replica's partition directory, <log dir>/<topic>-<partition>.
func (r *Replica) Dir() string { return r.dir }

// Log is the replica's storage; safe for concurrent Append and Read.
func (r *Replica) Log() Log { return r.log }

// Settings are the storage settings the log was opened with.
func (r *Replica) Settings() config.LogSettings { return r.settings }

// Config is the topic's effective configuration.
func (r *Replica) Config() *config.Topic { return r.conf.Load() }

// SetConfig replaces the topic's effective configuration (settings fixed
// at open excepted: those reopen the replica).
func (r *Replica) SetConfig(tc *config.Topic) { r.conf.Store(tc) }

// Identity is the identity (topic id and overrides) last recorded in the
// replica's directory; the reconciler's, like SetIdentity.
func (r *Replica) Identity() string { return r.identity }

// SetIdentity records what Identity answers.
func (r *Replica) SetIdentity(id string) { r.identity = id }

// TxnLog returns the log as a TxnLog, nil when it is not one.
func (r *Replica) TxnLog() TxnLog {
	t, _ := r.log.(TxnLog)
	return t
}

// LastStable is the last stable offset for a high watermark.
func (r *Replica) LastStable(hw int64) int64 {
	if t := r.TxnLog(); t != nil {
		return t.LastStableOffset(hw)
	}
	return hw
}

// Waiter is a long-polling request (a Fetch, an acks=all Produce): the
// replicas it watches poke it when they append or their high watermark or
// role changes.
type Waiter struct{ ch chan struct{} }

// NewWaiter returns a waiter with no pending wake-up.
func NewWaiter() *Waiter { return &Waiter{ch: make(chan struct{}, 1)} }

// C receives once per wake-up (wake-ups coalesce).
func (w *Waiter) C() <-chan struct{} { return w.ch }

// AddWaiter has w woken by the replica until RemoveWaiter.
func (r *Replica) AddWaiter(w *Waiter) {
	r.mu.Lock()
	r.waiters[w] = struct{}{}
	r.mu.Unlock()
}

// RemoveWaiter undoes AddWaiter.
func (r *Replica) RemoveWaiter(w *Waiter) {
	r.mu.Lock()
	delete(r.waiters, w)
	r.mu.Unlock()
}

// Wake pokes every waiter without blocking: a waiter already poked has a
// pending wake-up and needs no second one.
func (r *Replica) Wake() {
	r.mu.Lock()
	for w := range r.waiters {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
}

// HighWatermark is the offset below which every record is on every
// in-sync replica: what consumers may read. A leader that is its own only
// in-sync replica (every single-replica partition) answers its log end
// offset without any bookkeeping.
func (r *Replica) HighWatermark() int64 {
	if r.selfOnly.Load() {
		return r.log.EndOffset()
	}
	return r.hw.Load()
}

// Leading reports whether this replica is the partition's leader.
func (r *Replica) Leading() bool { return r.isLeader.Load() }

// SelfOnly reports whether this replica leads and is its own only in-sync
// replica, so that its high watermark is its log end offset.
func (r *Replica) SelfOnly() bool { return r.selfOnly.Load() }

// raiseHighWatermark raises the high watermark (it never goes back while
// this replica keeps its role) and wakes the waiters when it moved.
func (r *Replica) raiseHighWatermark(hw int64) {
	for {
		old := r.hw.Load()
		if hw <= old {
			return
		}
		if r.hw.CompareAndSwap(old, hw) {
			r.Wake()
			return
		}
	}
}

// StoredHighWatermark is the high watermark as stored, what a follower
// knows of its leader's (HighWatermark reads the log end instead while
// the replica leads alone).
func (r *Replica) StoredHighWatermark() int64 { return r.hw.Load() }

// LowerHighWatermark brings the stored high watermark down to at most
// offset (a follower truncating its log).
func (r *Replica) LowerHighWatermark(offset int64) {
	if hw := r.hw.Load(); hw > offset {
		r.hw.Store(offset)
	}
}

// FollowHighWatermark sets a follower's high watermark to its leader's,
// as far as its own log goes.
func (r *Replica) FollowHighWatermark(leaderHW int64) {
	r.hw.Store(min(leaderHW, r.log.EndOffset()))
}

// LeaderEpoch is the epoch this replica acts under.
func (r *Replica) LeaderEpoch() int32 {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return r.rs.epoch
}

// ISRSize is the number of in-sync replicas the leader counts on.
func (r *Replica) ISRSize() int {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return len(r.rs.isr)
}

// ISR is a copy of the in-sync replicas this replica knows of.
func (r *Replica) ISR() []int32 {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return slices.Clone(r.rs.isr)
}

// InSync reports whether broker is in the ISR this replica knows of.
func (r *Replica) InSync(broker int32) bool {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return slices.Contains(r.rs.isr, broker)
}

// LowWatermark is Kafka's lowWatermarkIfLeader: the lowest log start
// offset of the leader and its in-sync followers (-1 for a follower not
// heard from under this leadership); false when this replica does not
// lead.
func (r *Replica) LowWatermark() (int64, bool) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	if !r.rs.leader {
		return -1, false
	}
	lw := r.log.StartOffset()
	for _, id := range r.rs.isr {
		if f := r.rs.followers[id]; f != nil {
			lw = min(lw, f.logStart)
		}
	}
	return lw, true
}

// release ends the replica's role: it leads no more, and its waiters are
// woken to see it (Manager.Release also stops copying it).
func (r *Replica) release() {
	r.isLeader.Store(false)
	r.Wake()
}
