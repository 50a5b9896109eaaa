package broker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/tributary/tributary/broker/cluster"
)

// replica.go is a local replica's part in its partition's replication, on
// the leader's side: which role the metadata gives it, the followers' fetch
// positions, the high watermark, and the in-sync replica set it shrinks and
// expands (see broker/cluster/doc.go for who writes what in ZooKeeper). The
// follower's side is replica_fetcher.go.

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

// replicaState is guarded by partition.rmu.
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

// highWatermark is the offset below which every record is on every
// in-sync replica: what consumers may read. A leader that is its own only
// in-sync replica (every single-replica partition) answers its log end
// offset without any bookkeeping.
func (p *partition) highWatermark() int64 {
	if p.selfOnly.Load() {
		return p.log.EndOffset()
	}
	return p.hw.Load()
}

// leading reports whether this replica is the partition's leader.
func (p *partition) leading() bool { return p.isLeader.Load() }

// setHighWatermark raises the high watermark (it never goes back while
// this replica keeps its role) and wakes the waiters when it moved.
func (p *partition) raiseHighWatermark(hw int64) {
	for {
		old := p.hw.Load()
		if hw <= old {
			return
		}
		if p.hw.CompareAndSwap(old, hw) {
			p.wake()
			return
		}
	}
}

// leaderEpoch is the epoch this replica acts under.
func (p *partition) leaderEpoch() int32 {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return p.rs.epoch
}

// isrSize is the number of in-sync replicas the leader counts on.
func (p *partition) isrSize() int {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return len(p.rs.isr)
}

// applyRole brings the replica's role in line with the partition's state
// in the metadata. A new leader epoch resets the followers' positions (they
// are learnt again from their next fetches); the high watermark is kept,
// bounded by the log end offset.
func (b *Broker) applyRole(p *partition, cp cluster.Partition) {
	me := b.cfg.BrokerID
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
		b.advanceHighWatermark(p)
	}
	p.rmu.Unlock()

	if lead {
		b.fetchers.unfollow(p)
	} else {
		b.fetchers.follow(p, cp.Leader, epoch)
	}
	b.metrics.observeReplica(p, cp, me)
	p.wake() // waiters re-check: a fetch or produce waiting on a lost leadership ends
}

// advanceHighWatermark moves the leader's high watermark to the smallest
// log end offset of the in-sync replicas, if all are known, counting the
// replicas of an ISR being written too. p.rmu is held.
func (b *Broker) advanceHighWatermark(p *partition) {
	rs := &p.rs
	if !rs.leader || p.selfOnly.Load() {
		return
	}
	hw := p.log.EndOffset()
	for _, r := range rs.isr {
		if r == b.cfg.BrokerID {
			continue
		}
		f := rs.followers[r]
		if f == nil || f.leo < 0 {
			return
		}
		hw = min(hw, f.leo)
	}
	for _, r := range rs.pending {
		if f := rs.followers[r]; r != b.cfg.BrokerID && f != nil && !slices.Contains(rs.isr, r) {
			hw = min(hw, max(f.leo, 0))
		}
	}
	p.raiseHighWatermark(hw)
}

// followerFetched records a follower's fetch at offset: its log end offset,
// with its log start offset. It may advance the high watermark and add the
// follower to the ISR. It answers false when this replica does not lead or
// the broker is not a replica of the partition.
func (b *Broker) followerFetched(p *partition, follower int32, offset, logStart int64) bool {
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
	if !slices.Contains(rs.isr, follower) && offset >= p.highWatermark() && offset >= rs.epochStart &&
		!b.member.Metadata().IsShuttingDown(follower) {
		isr := append(slices.Clone(rs.isr), follower)
		slices.Sort(isr)
		b.alterISR(p, isr, "expand", follower)
	}
	b.advanceHighWatermark(p)
	return true
}

// shrinkISRs removes from every led partition's ISR the followers that
// have not caught up for replica.lag.time.max.ms.
func (b *Broker) shrinkISRs() {
	lag := b.cfg.Replication.LagTimeMax
	now := time.Now()
	for _, p := range b.allPartitions() {
		p.rmu.Lock()
		rs := &p.rs
		if rs.leader && !rs.altering && len(rs.isr) > 1 {
			var keep []int32
			var out int32 = -1
			for _, r := range rs.isr {
				f := rs.followers[r]
				if r != b.cfg.BrokerID && f != nil && now.Sub(f.lastCaughtUp) > lag {
					out = r
					continue
				}
				keep = append(keep, r)
			}
			if out >= 0 {
				b.alterISR(p, keep, "shrink", out)
			}
		}
		p.rmu.Unlock()
	}
}

// runISRShrinker checks the ISRs every half lag period, as Kafka does.
func (b *Broker) runISRShrinker() {
	defer b.wg.Done()
	t := time.NewTicker(max(b.cfg.Replication.LagTimeMax/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.shrinkISRs()
		case <-b.shutdownCtx.Done():
			return
		}
	}
}

// alterISR writes isr as the partition's ISR in the background (p.rmu is
// held). On success the leader uses it at once; a leader the controller has
// replaced meanwhile (ErrFenced) leaves it to the reconciler, which the
// controller's write reaches anyway.
func (b *Broker) alterISR(p *partition, isr []int32, why string, replica int32) {
	rs := &p.rs
	if rs.altering {
		return
	}
	rs.altering, rs.pending = true, slices.Clone(isr)
	if p.selfOnly.Load() && !(len(isr) == 1 && isr[0] == b.cfg.BrokerID) {
		// A sole in-sync leader acknowledges at its log end offset; from
		// now the follower being added counts (advanceHighWatermark).
		p.raiseHighWatermark(p.log.EndOffset())
		p.selfOnly.Store(false)
	}
	epoch := rs.epoch
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.shutdownCtx, 30*time.Second)
		defer cancel()
		st, err := b.member.AlterISR(ctx, p.topic, p.index, epoch, isr)
		p.rmu.Lock()
		defer p.rmu.Unlock()
		rs.altering, rs.pending = false, nil
		if err != nil && rs.epoch == epoch && rs.leader {
			// The ISR stays what it was; a sole in-sync leader goes back
			// to acknowledging at its log end offset.
			b.advanceHighWatermark(p)
			if len(rs.isr) == 1 && rs.isr[0] == b.cfg.BrokerID {
				p.selfOnly.Store(true)
			}
			p.wake()
		}
		switch {
		case errors.Is(err, cluster.ErrFenced):
			b.logger.Info("ISR change refused: the partition has a newer leader epoch", "topic", p.topic, "partition", p.index, "epoch", epoch)
			return
		case err != nil:
			b.res.logs.log(slog.LevelWarn, "alter-isr", "writing the ISR failed; retrying later", "topic", p.topic, "partition", p.index, "err", err)
			return
		}
		if rs.epoch != epoch || !rs.leader {
			return
		}
		rs.isr, rs.stateVersion = slices.Clone(st.ISR), max(rs.stateVersion, st.StateVersion())
		b.logger.Info("ISR "+why, "topic", p.topic, "partition", p.index, "replica", replica, "isr", st.ISR)
		b.metrics.isrChanges.WithLabelValues(why).Inc()
		self := len(rs.isr) == 1 && rs.isr[0] == b.cfg.BrokerID
		if p.selfOnly.Load() && !self {
			p.raiseHighWatermark(p.log.EndOffset())
		}
		p.selfOnly.Store(self)
		b.advanceHighWatermark(p)
		b.metrics.observeISR(p, len(rs.replicas), len(rs.isr))
		p.wake()
	}()
}

// waitCommitted waits until every partition's high watermark passes its
// target offset (acks=all), the deadline passes, or the replica stops
// leading. It returns the partitions still short.
func (b *Broker) waitCommitted(ctx context.Context, deadline time.Time, targets map[*partition]int64) map[*partition]bool {
	w := &waiter{ch: make(chan struct{}, 1)}
	for p := range targets {
		p.addWaiter(w)
		defer p.removeWaiter(w)
	}
	var timer *time.Timer
	for {
		short := map[*partition]bool{}
		for p, target := range targets {
			if !p.leading() || p.highWatermark() < target {
				short[p] = true
			}
		}
		done := true
		for p := range short {
			if p.leading() {
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
		case <-b.shutdownCtx.Done():
			return short
		}
	}
}
