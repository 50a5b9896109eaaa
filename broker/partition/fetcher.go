package partition

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
)

// fetcher.go is the follower's side of replication: one fetcher per
// leader broker copies the batches of every partition this broker follows
// there, with Fetch requests carrying this broker's id as replica_id. A
// partition that starts following a new leader epoch first asks the leader,
// with OffsetsForLeaderEpoch, where its own latest epoch ends in the
// leader's log, and truncates its log there: a tail the new leader never
// had (written by a leader that was cut off) is dropped before anything is
// copied. Nothing of that tail was ever readable by consumers: it was above
// the old leader's high watermark.

// followedPartition is a partition a fetcher copies.
type followedPartition struct {
	p     *Replica
	epoch int32
	// truncate is set when the leader epoch changed: the log must be
	// reconciled with the leader's before fetching.
	truncate bool
	// delay is the partition's back-off after its last error and
	// delayUntil when it ends: a partition the leader answered with an
	// error is left out of the requests until then, as Kafka's fetcher
	// delays a failed partition (replica.fetch.backoff.ms), while the
	// others go on being fetched at once: one partition in error must not
	// hold back the high watermark, and so acks=all, of the others.
	delay      time.Duration
	delayUntil time.Time
}

// fetcherManager owns the fetchers, one per leader broker.
type fetcherManager struct {
	d  *Deps
	mu sync.Mutex
	// byLeader holds the running fetchers; following maps a partition to
	// the leader it is followed on.
	byLeader  map[int32]*fetcher
	following map[*Replica]int32
	closed    bool
}

func newFetcherManager(d *Deps) *fetcherManager {
	return &fetcherManager{d: d, byLeader: map[int32]*fetcher{}, following: map[*Replica]int32{}}
}

// follow makes p copy from leader under epoch; leader -1 (no leader yet)
// stops copying until the metadata names one.
func (m *fetcherManager) follow(p *Replica, leader, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old, ok := m.following[p]; ok && old != leader {
		m.removeLocked(p, old)
	}
	if leader < 0 || leader == m.d.BrokerID {
		return
	}
	f := m.byLeader[leader]
	if f == nil {
		f = &fetcher{m: m, leader: leader, parts: map[*Replica]*followedPartition{}, kick: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(m.d.Shutdown)
		f.cancel = cancel
		m.byLeader[leader] = f
		m.d.WG.Add(1)
		go f.run(ctx)
	}
	m.following[p] = leader
	f.set(p, epoch)
}

// unfollow stops copying p (it leads now, or is released).
func (m *fetcherManager) unfollow(p *Replica) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.following[p]; ok {
		m.removeLocked(p, old)
	}
}

func (m *fetcherManager) removeLocked(p *Replica, leader int32) {
	delete(m.following, p)
	f := m.byLeader[leader]
	if f == nil {
		return
	}
	if f.remove(p) == 0 {
		f.cancel()
		delete(m.byLeader, leader)
	}
}

// close stops every fetcher; the broker waits for them through Deps.WG.
func (m *fetcherManager) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for id, f := range m.byLeader {
		f.cancel()
		delete(m.byLeader, id)
	}
	m.following = map[*Replica]int32{}
}

// fetcher copies from one leader broker.
type fetcher struct {
	m      *fetcherManager
	leader int32
	cancel context.CancelFunc
	kick   chan struct{}

	mu    sync.Mutex
	parts map[*Replica]*followedPartition
	// gen counts changes to parts that a Fetch must carry: a partition
	// added or moved to another epoch.
	gen uint64
	// interrupt cancels the Fetch in flight (nil when none). A partition
	// added while the fetcher long-polls the leader for the others is
	// fetched at once instead of after replica.fetch.wait.max.ms: the
	// first records into a new replicated topic are committed only when
	// its followers fetch them. Cancelling drops the connection (kgo
	// cannot take back a written request), so the leader ends the poll
	// and the next Fetch goes out on a new one.
	interrupt context.CancelFunc
}

func (f *fetcher) set(p *Replica, epoch int32) {
	f.mu.Lock()
	fp := f.parts[p]
	if fp == nil || fp.epoch != epoch {
		f.parts[p] = &followedPartition{p: p, epoch: epoch, truncate: true}
		f.gen++
		if f.interrupt != nil {
			f.interrupt()
			f.interrupt = nil
		}
	}
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(p *Replica) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, p)
	return len(f.parts)
}

// snapshot returns the partitions to fetch and the generation they are of.
func (f *fetcher) snapshot() ([]followedPartition, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]followedPartition, 0, len(f.parts))
	for _, fp := range f.parts {
		out = append(out, *fp)
	}
	return out, f.gen
}

// interruptible returns a context for a Fetch of the partitions of
// generation gen that set cancels when the partitions change; ok is false
// when they changed already (the Fetch would be stale).
func (f *fetcher) interruptible(ctx context.Context, gen uint64) (fctx context.Context, done func(), ok bool) {
	fctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen != gen {
		cancel()
		return nil, nil, false
	}
	f.interrupt = cancel
	return fctx, func() {
		f.mu.Lock()
		f.interrupt = nil
		f.mu.Unlock()
		cancel()
	}, true
}

// truncated clears the truncate mark of p if it is still at epoch.
func (f *fetcher) truncated(p *Replica, epoch int32) {
	f.mu.Lock()
	if fp := f.parts[p]; fp != nil && fp.epoch == epoch {
		fp.truncate = false
	}
	f.mu.Unlock()
}

// delayPartition backs p (at epoch) off after an error: from 2 ms while
// the leader does not serve a new partition yet (errLeaderBehind), from
// 50 ms otherwise, doubling up to 1 s.
func (f *fetcher) delayPartition(p *Replica, epoch int32, behind bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.parts[p]
	if fp == nil || fp.epoch != epoch {
		return
	}
	if behind {
		fp.delay = nextBehindBackoff(fp.delay)
	} else {
		fp.delay = nextBackoff(fp.delay)
	}
	fp.delayUntil = time.Now().Add(fp.delay)
}

// undelay clears p's back-off after an answer without error.
func (f *fetcher) undelay(p *Replica, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp := f.parts[p]; fp != nil && fp.epoch == epoch {
		fp.delay, fp.delayUntil = 0, time.Time{}
	}
}

// retruncate marks p for truncation again (its log no longer lines up).
func (f *fetcher) retruncate(p *Replica, epoch int32) {
	f.mu.Lock()
	if fp := f.parts[p]; fp != nil && fp.epoch == epoch {
		fp.truncate = true
	}
	f.mu.Unlock()
}

// run fetches until ctx ends. Errors back off from 50 ms up to 1 s.
func (f *fetcher) run(ctx context.Context) {
	d := f.m.d
	defer d.WG.Done()
	var cl *kgo.Client
	var addr string
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	var backoff time.Duration
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
		}
		parts, gen := f.snapshot()
		if len(parts) == 0 {
			select {
			case <-f.kick:
				continue
			case <-ctx.Done():
				return
			}
		}
		// The leader's address on the inter-broker listener comes from
		// the metadata; a broker that came back on another port gets a
		// new client.
		br, ok := d.Cluster.Metadata().Broker(f.leader)
		if !ok {
			backoff = nextBackoff(backoff)
			continue
		}
		host, port, ok := d.InterBroker.Endpoint(br)
		if !ok {
			d.RateLog(slog.LevelWarn, "replica-no-listener", "the leader has no inter-broker listener",
				"leader", f.leader, "inter.broker.listener.name", d.InterBroker.Listener())
			backoff = nextBackoff(backoff)
			continue
		}
		if a := net.JoinHostPort(host, strconv.Itoa(int(port))); a != addr || cl == nil {
			if cl != nil {
				cl.Close()
			}
			var err error
			cl, err = d.InterBroker.Client(a, "tributary-replica-"+strconv.Itoa(int(d.BrokerID)))
			if err != nil {
				d.RateLog(slog.LevelWarn, "replica-client", "replica fetcher client", "leader", f.leader, "err", err)
				backoff = nextBackoff(backoff)
				continue
			}
			addr = a
			d.Logger.Info("replica fetcher connecting to the leader", "leader", f.leader, "addr", a,
				"listener", d.InterBroker.Listener())
		}
		leaderBroker := cl.SeedBrokers()[0]
		if err := f.truncateAll(ctx, leaderBroker, parts); err != nil {
			if !errors.Is(err, errLeaderBehind) {
				d.RateLog(slog.LevelInfo, "replica-truncate-"+strconv.Itoa(int(f.leader)), "asking the leader for epoch end offsets", "leader", f.leader, "err", err)
			}
			backoff = backoffAfter(backoff, err)
			continue
		}
		// Again: the partitions just reconciled are fetched in this
		// Fetch, not in the next one, a long poll later. A partition
		// added since the first snapshot (gen) is not reconciled yet:
		// the loop goes round again for it.
		parts, _ = f.snapshot()
		fctx, done, current := f.interruptible(ctx, gen)
		if !current {
			continue
		}
		ok, err := f.fetchOnce(fctx, leaderBroker, parts)
		interrupted := fctx.Err() != nil
		done()
		if interrupted && ctx.Err() == nil {
			// Interrupted for a new partition, not an error.
			backoff = 0
			continue
		}
		if err != nil || !ok {
			if err != nil && ctx.Err() == nil && !errors.Is(err, errLeaderBehind) {
				d.RateLog(slog.LevelInfo, "replica-fetch-"+strconv.Itoa(int(f.leader)), "fetching from the leader", "leader", f.leader, "err", err)
			}
			backoff = backoffAfter(backoff, err)
			continue
		}
		backoff = 0
	}
}

func nextBackoff(d time.Duration) time.Duration {
	return min(max(2*d, 50*time.Millisecond), time.Second)
}

// errLeaderBehind marks an answer about a new partition (an empty log that
// never had a record: newPartition) of a leader that does not serve it yet
// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION) or is at an older
// leader epoch than ours (UNKNOWN_LEADER_EPOCH): its metadata lags ours by
// the time its reconciler takes to open the log. A follower hears of a new
// partition about when its leader does, so this is the usual first answer
// for a new replicated partition, whose first records wait for the
// followers: the retries start at 2 ms (nextBehindBackoff) instead of
// nextBackoff's 50. Partitions with data keep nextBackoff's pace (a leader
// change after a broker failure is not sped up).
var errLeaderBehind = errors.New("the leader does not serve the partition at our epoch yet")

// newPartition reports whether p's log is empty and never had a record.
func newPartition(p *Replica) bool {
	return p.Log().EndOffset() == 0 && p.Log().StartOffset() == 0
}

// leaderBehind reports whether code is one of errLeaderBehind's.
func leaderBehind(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownLeaderEpoch.Code:
		return true
	}
	return false
}

// nextBehindBackoff doubles from 2 ms up to nextBackoff's ceiling.
func nextBehindBackoff(d time.Duration) time.Duration {
	return min(max(2*d, 2*time.Millisecond), time.Second)
}

// backoffAfter is the back-off after err (or a fetch that made no progress).
func backoffAfter(d time.Duration, err error) time.Duration {
	if errors.Is(err, errLeaderBehind) {
		return nextBehindBackoff(d)
	}
	return nextBackoff(d)
}

// truncateAll reconciles the logs marked for truncation with the leader's.
func (f *fetcher) truncateAll(ctx context.Context, leader *kgo.Broker, parts []followedPartition) error {
	d := f.m.d
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = d.BrokerID
	var todo []followedPartition
	topics := map[string]int{}
	now := time.Now()
	for _, fp := range parts {
		if !fp.truncate || now.Before(fp.delayUntil) {
			continue
		}
		todo = append(todo, fp)
		i, ok := topics[fp.p.Topic()]
		if !ok {
			i = len(req.Topics)
			topics[fp.p.Topic()] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = fp.p.Topic()
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = fp.p.Partition()
		rp.CurrentLeaderEpoch = fp.epoch
		rp.LeaderEpoch = fp.p.Log().LatestEpoch()
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(todo) == 0 {
		return nil
	}
	kresp, err := leader.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	answers := map[string]map[int32]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for _, rt := range resp.Topics {
		m := map[int32]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
		for _, rp := range rt.Partitions {
			m[rp.Partition] = rp
		}
		answers[rt.Topic] = m
	}
	for _, fp := range todo {
		p := fp.p
		a, ok := answers[p.Topic()][p.Partition()]
		if !ok {
			continue
		}
		if a.ErrorCode != 0 {
			// This partition alone waits: the others go on.
			behind := leaderBehind(a.ErrorCode) && newPartition(p)
			if !behind {
				d.RateLog(slog.LevelInfo, "replica-truncate-"+strconv.Itoa(int(f.leader)), "asking the leader for epoch end offsets",
					"topic", p.Topic(), "partition", p.Partition(), "leader", f.leader, "err", kerr.ErrorForCode(a.ErrorCode))
			}
			f.delayPartition(p, fp.epoch, behind)
			continue
		}
		leo := p.Log().EndOffset()
		target := leo
		switch {
		case p.Log().LatestEpoch() < 0:
			// Nothing to compare epochs with (an empty log, or one written
			// before epochs were recorded): keep only what was committed.
			target = min(leo, p.StoredHighWatermark())
		case a.EndOffset < 0:
			// The leader has no epoch as old as ours: keep the committed part.
			target = min(leo, p.StoredHighWatermark())
		default:
			target = min(leo, a.EndOffset)
		}
		target = max(target, p.Log().StartOffset())
		if target < leo {
			d.Logger.Warn("truncating a follower's divergent tail", "topic", p.Topic(), "partition", p.Partition(),
				"from", leo, "to", target, "leader", f.leader, "leader_epoch", fp.epoch)
			if err := p.Log().TruncateTo(target); err != nil {
				d.RateLog(slog.LevelWarn, "replica-truncate", "truncating a follower's log", "topic", p.Topic(), "partition", p.Partition(), "err", err)
				f.delayPartition(p, fp.epoch, false)
				continue
			}
			d.Metrics.Truncated()
		}
		p.LowerHighWatermark(target)
		f.truncated(p, fp.epoch)
		f.undelay(p, fp.epoch)
	}
	return nil
}

// fetchOnce sends one Fetch for every partition ready to fetch and appends
// what comes back. It reports false when nothing could be fetched.
func (f *fetcher) fetchOnce(ctx context.Context, leader *kgo.Broker, parts []followedPartition) (bool, error) {
	d := f.m.d
	rc := d.Replication
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = d.BrokerID
	req.MaxWaitMillis = int32(rc.FetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = int32(rc.FetchResponseMaxBytes)
	req.SessionEpoch = -1
	byKey := map[string]map[int32]followedPartition{}
	topics := map[string]int{}
	n, held := 0, false
	snap := d.Cluster.Metadata()
	throttled := map[*Replica]bool{}
	allow := d.Throttle.Allowance()
	now := time.Now()
	var wake time.Time // the end of the earliest partition back-off
	for _, fp := range parts {
		if now.Before(fp.delayUntil) {
			if wake.IsZero() || fp.delayUntil.Before(wake) {
				wake = fp.delayUntil
			}
			continue
		}
		if fp.truncate {
			continue
		}
		maxBytes := int32(rc.FetchMaxBytes)
		if allow >= 0 && followerThrottled(snap, fp.p, d.BrokerID) {
			// Over the follower throttle: left out of this fetch, as
			// Kafka's fetcher does (throttle.go).
			if allow == 0 {
				held = true
				continue
			}
			throttled[fp.p] = true
			maxBytes = int32(min(int64(maxBytes), allow))
		}
		n++
		i, ok := topics[fp.p.Topic()]
		if !ok {
			i = len(req.Topics)
			topics[fp.p.Topic()] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = fp.p.Topic()
			req.Topics = append(req.Topics, rt)
			byKey[fp.p.Topic()] = map[int32]followedPartition{}
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = fp.p.Partition()
		rp.FetchOffset = fp.p.Log().EndOffset()
		rp.LogStartOffset = fp.p.Log().StartOffset()
		rp.PartitionMaxBytes = maxBytes
		rp.CurrentLeaderEpoch = fp.epoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		byKey[fp.p.Topic()][fp.p.Partition()] = fp
	}
	if n == 0 && (held || !wake.IsZero()) {
		wait := time.Until(wake)
		if held {
			wait = d.Throttle.Wait()
			if !wake.IsZero() {
				wait = min(wait, time.Until(wake))
			}
		}
		select {
		case <-time.After(wait):
		case <-f.kick:
		case <-ctx.Done():
		}
		return true, nil
	}
	if n == 0 {
		return false, nil
	}
	kresp, err := leader.Request(ctx, req)
	if err != nil {
		return false, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return false, kerr.ErrorForCode(resp.ErrorCode)
	}
	f.learnLogStarts(ctx, leader, resp)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fp, ok := byKey[rt.Topic][rp.Partition]
			if !ok {
				continue
			}
			if throttled[fp.p] {
				d.Throttle.Record(int64(len(rp.RecordBatches)))
			}
			if f.applyFetched(fp, rp) {
				if fp.delay > 0 {
					f.undelay(fp.p, fp.epoch)
				}
			} else {
				f.delayPartition(fp.p, fp.epoch, leaderBehind(rp.ErrorCode) && newPartition(fp.p))
			}
		}
	}
	// The partitions in error wait their own back-off, not the others.
	return true, nil
}

// learnLogStarts fills in the leader's log start offset of the partitions
// answered OFFSET_OUT_OF_RANGE without one (a leader that, like Kafka's,
// leaves it out of error answers) by ListOffsets earliest, as Kafka's
// follower does (fetchEarliestOffsetFromLeader); applyFetched then knows
// whether to start over at it. A failed ListOffsets leaves them unknown:
// the next fetch asks again.
func (f *fetcher) learnLogStarts(ctx context.Context, leader *kgo.Broker, resp *kmsg.FetchResponse) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.m.d.BrokerID
	asked := false
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		var lt *kmsg.ListOffsetsRequestTopic
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.OffsetOutOfRange.Code || rp.LogStartOffset >= 0 {
				continue
			}
			if lt == nil {
				req.Topics = append(req.Topics, kmsg.NewListOffsetsRequestTopic())
				lt = &req.Topics[len(req.Topics)-1]
				lt.Topic = rt.Topic
			}
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = rp.Partition, -2 // earliest
			lt.Partitions = append(lt.Partitions, lp)
			asked = true
		}
	}
	if !asked {
		return
	}
	kresp, err := leader.Request(ctx, req)
	if err != nil {
		return
	}
	starts := map[string]map[int32]int64{}
	for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 {
				if starts[rt.Topic] == nil {
					starts[rt.Topic] = map[int32]int64{}
				}
				starts[rt.Topic][rp.Partition] = rp.Offset
			}
		}
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if start, ok := starts[rt.Topic][rp.Partition]; ok && rp.ErrorCode == kerr.OffsetOutOfRange.Code && rp.LogStartOffset < 0 {
				rp.LogStartOffset = start
			}
		}
	}
}

// applyFetched appends one partition's fetched batches. It reports false
// on an error that calls for a back-off.
func (f *fetcher) applyFetched(fp followedPartition, rp kmsg.FetchResponseTopicPartition) bool {
	d := f.m.d
	p := fp.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange) && rp.LogStartOffset > p.Log().EndOffset():
		// The leader's retention deleted what we would copy next: start
		// over at its log start, as Kafka's truncateFullyAndStartAt.
		d.Logger.Warn("follower behind the leader's log start; starting over there", "topic", p.Topic(), "partition", p.Partition(),
			"log_end", p.Log().EndOffset(), "leader_log_start", rp.LogStartOffset)
		if err := p.Log().TruncateFullyAndStartAt(rp.LogStartOffset); err != nil {
			d.RateLog(slog.LevelWarn, "replica-restart", "restarting a follower's log", "topic", p.Topic(), "partition", p.Partition(), "err", err)
		}
		p.LowerHighWatermark(p.Log().EndOffset())
		return true // fetched again at once, from there
	case errors.Is(err, kerr.OffsetOutOfRange):
		// Our log end is past the leader's: reconcile again.
		f.retruncate(p, fp.epoch)
		return false
	default:
		// Not (or no longer) the leader, or an epoch mismatch: the
		// metadata will say more; retry after a back-off.
		d.RateLog(slog.LevelInfo, "replica-fetch-code-"+strconv.Itoa(int(rp.ErrorCode)), "leader refused a replica fetch",
			"topic", p.Topic(), "partition", p.Partition(), "leader", f.leader, "err", err)
		return false
	}
	// Under f.mu, so that a partition removed from this fetcher (it
	// follows another leader or epoch now, and another fetcher may be
	// truncating it) gets no batch of a response that was in flight.
	f.mu.Lock()
	if cur := f.parts[p]; cur == nil || cur.epoch != fp.epoch || cur.truncate {
		f.mu.Unlock()
		return true
	}
	if data := wholeBatches(rp.RecordBatches); len(data) > 0 {
		if _, err := p.Log().AppendReplica(data); err != nil {
			f.mu.Unlock()
			d.RateLog(slog.LevelWarn, "replica-append", "appending fetched batches", "topic", p.Topic(), "partition", p.Partition(), "err", err)
			f.retruncate(p, fp.epoch)
			return false
		}
		d.Metrics.ObserveOffsets(p)
	}
	if rp.HighWatermark >= 0 {
		p.FollowHighWatermark(rp.HighWatermark)
	}
	followLogStart(d, p, rp.LogStartOffset)
	f.mu.Unlock()
	return true
}

// The frame of a record batch (Kafka's magic-2 format): the length at
// batchLengthOffset counts the bytes after baseOffset and itself.
const (
	batchLengthOffset  = 8
	batchHeaderSize    = 61
	batchOverheadNoLen = 12 // baseOffset + batchLength precede the counted bytes
)

// wholeBatches trims a trailing partial batch (a leader may cut a response
// at its byte limit).
func wholeBatches(data []byte) []byte {
	n := 0
	for len(data)-n >= batchOverheadNoLen {
		size := int(int32(binary.BigEndian.Uint32(data[n+batchLengthOffset:]))) + batchOverheadNoLen
		if size < batchHeaderSize || n+size > len(data) {
			break
		}
		n += size
	}
	return data[:n]
}

// followerThrottled reports whether this follower throttles its copying of
// p: the topic's follower.replication.throttled.replicas names this
// broker's replica of p and the metadata has it out of the ISR.
func followerThrottled(snap cluster.Snapshot, p *Replica, me int32) bool {
	tc := p.Config()
	if tc == nil || !tc.FollowerThrottled.Includes(p.Partition(), me) {
		return false
	}
	t, ok := snap.Topics[p.Topic()]
	if !ok || int(p.Partition()) >= len(t.Partitions) {
		return false
	}
	return !slices.Contains(t.Partitions[p.Partition()].ISR, me)
}

// followLogStart moves a follower's log start up to its leader's (the
// LogStartOffset of a fetch response), as far as its own log goes: records
// the leader deleted are deleted on every replica.
func followLogStart(d *Deps, p *Replica, leaderStart int64) {
	if leaderStart <= p.Log().StartOffset() {
		return
	}
	del, ok := p.Log().(RecordDeleter)
	if !ok {
		return
	}
	if _, err := del.DeleteRecordsBefore(min(leaderStart, p.Log().EndOffset())); err != nil {
		d.RateLog(slog.LevelWarn, "replica-log-start", "following the leader's log start offset", "topic", p.Topic(), "partition", p.Partition(), "err", err)
	}
}
