package partition

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
)

// replication.go is a local replica's part in its partition's replication,
// on the leader's side: which role the metadata gives it, the followers'
// fetch positions, the high watermark, and the in-sync replica set it
// shrinks and expands (see broker/cluster/doc.go for who writes what in
// ZooKeeper). The follower's side is the broker's replica fetcher.

// Cluster is what replication needs from the cluster membership.
type Cluster interface {
	// Metadata is the latest cluster metadata (leaders' brokers, ISRs).
	Metadata() cluster.Snapshot
	// IsShuttingDown reports whether the broker is in controlled shutdown
	// in the current metadata.
	IsShuttingDown(broker int32) bool
	// AlterISR writes the partition's ISR by compare-and-set under the
	// leader epoch (cluster.Member.AlterISR).
	AlterISR(ctx context.Context, topic string, p, leaderEpoch int32, isr []int32) (cluster.Partition, error)
}

// InterBroker reaches the other brokers on the inter-broker listener.
type InterBroker interface {
	// Listener names the inter-broker listener.
	Listener() string
	// Endpoint is broker b's address on it; false when b has none.
	Endpoint(b cluster.Broker) (host string, port int32, ok bool)
	// Client is a Kafka client of one broker at addr, logged in as this
	// broker on the inter-broker listener's protocol.
	Client(addr, clientID string) (*kgo.Client, error)
}

// Throttle is the follower's replication throttle
// (follower.replication.throttled.rate): what throttled replicas may copy.
type Throttle interface {
	// Allowance is how many bytes may be fetched now: -1 when unlimited,
	// 0 while in debt.
	Allowance() int64
	// Wait is how long until the throttle is out of debt.
	Wait() time.Duration
	// Record charges n bytes copied for throttled replicas.
	Record(n int64)
}

// Metrics records the replication state of the replicas.
type Metrics interface {
	// ObserveReplica records r's state after a metadata change.
	ObserveReplica(r *Replica, cp cluster.Partition)
	// ObserveISR records whether the partition r leads is under-replicated.
	ObserveISR(r *Replica, replicas, isr int)
	// ISRChanged counts an ISR change ("shrink" or "expand").
	ISRChanged(why string)
	// ObserveOffsets records r's log start and end offsets.
	ObserveOffsets(r *Replica)
	// Truncated counts a follower's truncation of a divergent tail.
	Truncated()
	// Forget drops r's series: it is released.
	Forget(r *Replica)
}

// Deps are the broker services replication runs on.
type Deps struct {
	BrokerID int32
	// LogDirs are log.dirs, each with its high watermark checkpoint.
	LogDirs []string
	// Open opens a partition's storage.
	Open Opener
	// Replication is replica.* (lag, fetch sizes and wait).
	Replication config.Replication
	Logger      *slog.Logger
	// RateLog logs a message of its kind at most once a second.
	RateLog     func(level slog.Level, kind, msg string, args ...any)
	Cluster     Cluster
	InterBroker InterBroker
	Throttle    Throttle
	Metrics     Metrics
	// Shutdown ends when the broker shuts down; WG counts the goroutines
	// replication starts, for the broker to wait on.
	Shutdown context.Context
	WG       *sync.WaitGroup
}

// Manager holds the local replicas, by topic (partitions.go), and runs
// the leader's side of their replication. Safe for concurrent use.
type Manager struct {
	d        Deps
	fetchers *fetcherManager
	// hwStart holds the high watermarks checkpointed by the last run.
	hwStart map[TopicPartition]int64

	mu sync.RWMutex
	// topics holds one slot per partition of each served topic, nil
	// where this broker holds no replica; a slice is never modified, only
	// replaced (Publish).
	topics map[string][]*Replica
}

// NewManager returns a Manager over d, serving no replica yet; the
// replicas it opens start at the high watermarks checkpointed in d.LogDirs.
func NewManager(d Deps) *Manager {
	m := &Manager{d: d, topics: map[string][]*Replica{}, hwStart: LoadHWCheckpoints(d.LogDirs, d.Logger)}
	m.fetchers = newFetcherManager(&m.d)
	return m
}

// Open opens the replica of partition p of topic in dir (see Open), at the
// high watermark it had checkpointed. It is served once published
// (Publish) and replicates once given a role (ApplyRole).
func (m *Manager) Open(topic string, p int32, dir string, tc config.Topic) (*Replica, error) {
	r, err := Open(m.d.Open, topic, p, dir, tc, m.hwStart[TopicPartition{Topic: topic, Partition: p}])
	if err != nil {
		return nil, err
	}
	m.d.Metrics.ObserveOffsets(r)
	return r, nil
}

// Release stops r: it is no longer copied from a leader, leads no more,
// its waiters are woken to see it, then its log is closed (flushed
// first), or deleted with its data when del. Unpublishing it is the
// caller's (Publish, Remove).
func (m *Manager) Release(r *Replica, del bool) {
	m.fetchers.unfollow(r)
	r.release()
	m.d.Metrics.Forget(r)
	var err error
	if del {
		err = r.log.Delete()
	} else if err = r.log.Flush(); err == nil {
		err = r.log.Close()
	}
	if err != nil {
		m.d.Logger.Error("releasing partition", "topic", r.topic, "partition", r.index, "delete", del, "err", err)
	}
}

// StopFetchers stops copying from the leaders, for good (the broker's
// Close); the fetchers end through Deps.WG.
func (m *Manager) StopFetchers() { m.fetchers.close() }

// ApplyRole brings the replica's role in line with the partition's state
// in the metadata. A new leader epoch resets the followers' positions (they
// are learnt again from their next fetches); the high watermark is kept,
// bounded by the log end offset.
func (m *Manager) ApplyRole(p *Replica, cp cluster.Partition) {
	me := m.d.BrokerID
	p.rmu.Lock()
	rs := &p.rs
	if v := cp.StateVersion(); rs.leader && cp.Leader == me && cp.LeaderEpoch == rs.epoch && v >= 0 && v < rs.stateVersion {
		// A view older than this leader's own ISR write (the reconciler
		// took it before the write landed): applying it would bring the
		// old ISR back. The newer view follows.
		p.rmu.Unlock()
		return
	}
	rs.stateVersion = cp.StateVersion()
	lead := cp.Leader == me
	newEpoch := rs.leader != lead || rs.epoch != cp.LeaderEpoch || rs.leaderID != cp.Leader
	rs.replicas = slices.Clone(cp.Replicas)
	rs.isr = slices.Clone(cp.ISR)
	rs.leaderID = cp.Leader
	if newEpoch {
		rs.epoch = cp.LeaderEpoch
		rs.leader = lead
		rs.followers = map[int32]*followerState{}
		rs.pending = nil // the write in flight, if any, is fenced
		if lead {
			leo := p.log.EndOffset()
			rs.epochStart = leo
			now := time.Now()
			for _, r := range cp.Replicas {
				if r != me {
					// Kafka's leader gives every follower a full lag
					// period from its election before shrinking the ISR.
					rs.followers[r] = &followerState{leo: -1, logStart: -1, lastCaughtUp: now, lastFetch: now, lastFetchLeaderLEO: leo}
				}
			}
		}
	}
	if lead && rs.followers == nil {
		rs.followers = map[int32]*followerState{}
	}
	if lead && !newEpoch {
		// A reassignment changes the replicas under the same epoch: the
		// added ones are followers from now, the removed ones are not.
		now, leo := time.Now(), p.log.EndOffset()
		for _, r := range cp.Replicas {
			if _, ok := rs.followers[r]; !ok && r != me {
				rs.followers[r] = &followerState{leo: -1, logStart: -1, lastCaughtUp: now, lastFetch: now, lastFetchLeaderLEO: leo}
			}
		}
		for r := range rs.followers {
			if !slices.Contains(cp.Replicas, r) {
				delete(rs.followers, r)
			}
		}
	}
	// While an ISR with more replicas is being written, the leader counts
	// on them already (advanceHighWatermark), even if the metadata has not
	// caught up with the write.
	selfOnly := lead && len(rs.isr) == 1 && rs.isr[0] == me && (rs.pending == nil || len(rs.pending) == 1)
	// The stored high watermark stays correct across the switch: while
	// selfOnly, it is the log end offset.
	if p.selfOnly.Load() && !selfOnly {
		p.raiseHighWatermark(p.log.EndOffset())
	}
	if hw, leo := p.hw.Load(), p.log.EndOffset(); hw > leo {
		p.hw.Store(leo)
	}
	p.selfOnly.Store(selfOnly)
	p.isLeader.Store(lead)
	epoch := rs.epoch
	if lead {
		m.advanceHighWatermark(p)
	}
	p.rmu.Unlock()

	if lead {
		m.fetchers.unfollow(p)
	} else {
		m.fetchers.follow(p, cp.Leader, epoch)
	}
	m.d.Metrics.ObserveReplica(p, cp)
	p.Wake() // waiters re-check: a fetch or produce waiting on a lost leadership ends
}

// advanceHighWatermark moves the leader's high watermark to the smallest
// log end offset of the in-sync replicas, if all are known, counting the
// replicas of an ISR being written too. p.rmu is held.
func (m *Manager) advanceHighWatermark(p *Replica) {
	rs := &p.rs
	if !rs.leader || p.selfOnly.Load() {
		return
	}
	hw := p.log.EndOffset()
	for _, r := range rs.isr {
		if r == m.d.BrokerID {
			continue
		}
		f := rs.followers[r]
		if f == nil || f.leo < 0 {
			return
		}
		hw = min(hw, f.leo)
	}
	for _, r := range rs.pending {
		if f := rs.followers[r]; r != m.d.BrokerID && f != nil && !slices.Contains(rs.isr, r) {
			hw = min(hw, max(f.leo, 0))
		}
	}
	p.raiseHighWatermark(hw)
}

// FollowerFetched records a follower's fetch at offset: its log end offset,
// with its log start offset. It may advance the high watermark and add the
// follower to the ISR. It answers false when this replica does not lead or
// the follower is not a replica of the partition.
func (m *Manager) FollowerFetched(p *Replica, follower int32, offset, logStart int64) bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	rs := &p.rs
	f := rs.followers[follower]
	if !rs.leader || f == nil {
		return false
	}
	now := time.Now()
	leo := p.log.EndOffset()
	if offset > leo {
		// Past our log: the follower holds a tail we never had (copied
		// from an earlier leader). It must not count towards the high
		// watermark; the response says OffsetOutOfRange and the follower
		// reconciles its log.
		return true
	}
	switch {
	case offset >= leo:
		f.lastCaughtUp = now
	case offset >= f.lastFetchLeaderLEO && f.lastFetch.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetch
	}
	f.lastFetch, f.lastFetchLeaderLEO = now, leo
	f.leo, f.logStart = offset, logStart
	// A broker in controlled shutdown is kept out: the controller just
	// took it out of the ISR so that it can leave.
	if !slices.Contains(rs.isr, follower) && offset >= p.HighWatermark() && offset >= rs.epochStart &&
		!m.d.Cluster.IsShuttingDown(follower) {
		isr := append(slices.Clone(rs.isr), follower)
		slices.Sort(isr)
		m.alterISR(p, isr, "expand", follower)
	}
	m.advanceHighWatermark(p)
	return true
}

// shrinkISRs removes from every led partition's ISR the followers that
// have not caught up for replica.lag.time.max.ms.
func (m *Manager) shrinkISRs() {
	lag := m.d.Replication.LagTimeMax
	now := time.Now()
	for _, p := range m.All() {
		p.rmu.Lock()
		rs := &p.rs
		if rs.leader && !rs.altering && len(rs.isr) > 1 {
			var keep []int32
			var out int32 = -1
			for _, r := range rs.isr {
				f := rs.followers[r]
				if r != m.d.BrokerID && f != nil && now.Sub(f.lastCaughtUp) > lag {
					out = r
					continue
				}
				keep = append(keep, r)
			}
			if out >= 0 {
				m.alterISR(p, keep, "shrink", out)
			}
		}
		p.rmu.Unlock()
	}
}

// RunISRShrinker checks the ISRs every half lag period, as Kafka does,
// until shutdown; the caller has counted it in Deps.WG.
func (m *Manager) RunISRShrinker() {
	defer m.d.WG.Done()
	t := time.NewTicker(max(m.d.Replication.LagTimeMax/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.shrinkISRs()
		case <-m.d.Shutdown.Done():
			return
		}
	}
}

// alterISR writes isr as the partition's ISR in the background (p.rmu is
// held). On success the leader uses it at once; a leader the controller has
// replaced meanwhile (ErrFenced) leaves it to the reconciler, which the
// controller's write reaches anyway.
func (m *Manager) alterISR(p *Replica, isr []int32, why string, replica int32) {
	rs := &p.rs
	if rs.altering {
		return
	}
	rs.altering, rs.pending = true, slices.Clone(isr)
	me := m.d.BrokerID
	if p.selfOnly.Load() && !(len(isr) == 1 && isr[0] == me) {
		// A sole in-sync leader acknowledges at its log end offset; from
		// now the follower being added counts (advanceHighWatermark).
		p.raiseHighWatermark(p.log.EndOffset())
		p.selfOnly.Store(false)
	}
	epoch := rs.epoch
	m.d.WG.Add(1)
	go func() {
		defer m.d.WG.Done()
		ctx, cancel := context.WithTimeout(m.d.Shutdown, 30*time.Second)
		defer cancel()
		st, err := m.d.Cluster.AlterISR(ctx, p.topic, p.index, epoch, isr)
		p.rmu.Lock()
		defer p.rmu.Unlock()
		rs.altering, rs.pending = false, nil
		if err != nil && rs.epoch == epoch && rs.leader {
			// The ISR stays what it was; a sole in-sync leader goes back
			// to acknowledging at its log end offset.
			m.advanceHighWatermark(p)
			if len(rs.isr) == 1 && rs.isr[0] == me {
				p.selfOnly.Store(true)
			}
			p.Wake()
		}
		switch {
		case errors.Is(err, cluster.ErrFenced):
			m.d.Logger.Info("ISR change refused: the partition has a newer leader epoch", "topic", p.topic, "partition", p.index, "epoch", epoch)
			return
		case err != nil:
			m.d.RateLog(slog.LevelWarn, "alter-isr", "writing the ISR failed; retrying later", "topic", p.topic, "partition", p.index, "err", err)
			return
		}
		if rs.epoch != epoch || !rs.leader {
			return
		}
		rs.isr, rs.stateVersion = slices.Clone(st.ISR), max(rs.stateVersion, st.StateVersion())
		m.d.Logger.Info("ISR "+why, "topic", p.topic, "partition", p.index, "replica", replica, "isr", st.ISR)
		m.d.Metrics.ISRChanged(why)
		self := len(rs.isr) == 1 && rs.isr[0] == me
		if p.selfOnly.Load() && !self {
			p.raiseHighWatermark(p.log.EndOffset())
		}
		p.selfOnly.Store(self)
		m.advanceHighWatermark(p)
		m.d.Metrics.ObserveISR(p, len(rs.replicas), len(rs.isr))
		p.Wake()
	}()
}

// WaitCommitted waits until every partition's high watermark passes its
// target offset (acks=all), the deadline passes, ctx ends, the broker
// shuts down, or the replica stops leading. It returns the partitions
// still short.
func (m *Manager) WaitCommitted(ctx context.Context, deadline time.Time, targets map[*Replica]int64) map[*Replica]bool {
	w := NewWaiter()
	for p := range targets {
		p.AddWaiter(w)
		defer p.RemoveWaiter(w)
	}
	var timer *time.Timer
	for {
		short := map[*Replica]bool{}
		for p, target := range targets {
			if !p.Leading() || p.HighWatermark() < target {
				short[p] = true
			}
		}
		done := true
		for p := range short {
			if p.Leading() {
				done = false
			}
		}
		if done {
			return short
		}
		left := time.Until(deadline)
		if left <= 0 {
			return short
		}
		if timer == nil {
			timer = time.NewTimer(left)
			defer timer.Stop()
		}
		select {
		case <-w.ch:
		case <-timer.C:
		case <-ctx.Done():
			return short
		case <-m.d.Shutdown.Done():
			return short
		}
	}
}
