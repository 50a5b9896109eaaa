package txn

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partset"
)

// Marker is one transaction's end as the coordinator writes it to the
// transaction's partitions (WriteTxnMarkers).
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// CoordinatorEpoch is the leader epoch of the state partition, so that
	// leaders ignore markers of a coordinator that was replaced.
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// Markers writes transaction markers to the leaders of their partitions.
type Markers interface {
	// WriteMarkers returns nil once every partition of m has the marker
	// (a partition that no longer exists counts as done). An error
	// wrapping ErrMarkersFenced (a leader knows a newer coordinator or
	// producer epoch) stops the completion: this coordinator is stale.
	// Any other error makes the coordinator retry with backoff until ctx
	// ends (the state partition moved away).
	WriteMarkers(ctx context.Context, m Marker) error
}

// ErrMarkersFenced: a partition leader refused a marker as stale
// (TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH).
var ErrMarkersFenced = errors.New("txn: markers fenced by a newer coordinator or producer epoch")

// Coordinator is the transaction coordinator of one broker: the
// transactional ids of the state-topic partitions this broker leads,
// loaded with Load and dropped with Unload as leadership moves.
type Coordinator struct {
	cfg      Config
	allocate func(context.Context) (int64, error)
	markers  Markers

	// parts are the state partitions served here, loading or loaded.
	parts *partset.Set[Log, *statePartition]
	// wg counts the marker writers.
	wg sync.WaitGroup
}

// servedPartition is a state partition of the set, with its contents.
type servedPartition = partset.Partition[Log, *statePartition]

// statePartition is the contents of one loaded (or loading) partition of
// the state topic.
type statePartition struct {
	index int32
	log   Log
	// epoch is the leader epoch it was loaded at: the coordinator epoch
	// of its markers.
	epoch int32
	// ctx ends when the partition is unloaded; marker writes stop then.
	ctx context.Context

	// mu guards txns and serializes appends, so that the log and the
	// memory see transitions in one order.
	mu   sync.Mutex
	txns map[string]*metadata
	// gone is set when the partition has left the set and its state is
	// dropped: holders of mu write nothing more.
	gone bool
}

// New returns a coordinator serving no partition yet. allocate hands out
// fresh producer ids; markers writes transaction markers.
func New(cfg Config, allocate func(context.Context) (int64, error), markers Markers) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg.withDefaults(), allocate: allocate, markers: markers}
	c.parts = partset.New(partset.Hooks[Log, *statePartition]{
		New: func(p *servedPartition) *statePartition {
			return &statePartition{index: p.Index, log: p.Log, epoch: p.Epoch, ctx: p.Context(), txns: map[string]*metadata{}}
		},
		Load:   c.load,
		Unload: c.unload,
	})
	return c, nil
}

// Config returns the effective configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// Partitions is the partition count of the state topic.
func (c *Coordinator) Partitions() int32 { return c.cfg.StatePartitions }

// PartitionFor is the state partition owning a transactional id.
func (c *Coordinator) PartitionFor(id string) int32 { return PartitionFor(id, c.cfg.StatePartitions) }

// Load makes this coordinator serve state partition p from log, led at
// leader epoch epoch (the coordinator epoch of its markers). The log is
// read back in the background; transactions found preparing a commit or
// an abort are completed. Loading the log already loaded at the same
// epoch is a no-op; otherwise the old one is unloaded first.
func (c *Coordinator) Load(p int32, log Log, epoch int32) { c.parts.Load(p, log, epoch) }

// load reads a state partition back; an error unloads it (it is not
// served until loaded again).
func (c *Coordinator) load(part *servedPartition) error {
	sp := part.Contents
	txns := map[string]*metadata{}
	corrupt := 0
	err := sp.log.Replay(func(r Record) error {
		if r.Control || r.Transactional {
			return nil // none are written here; skipped like Kafka's loader
		}
		id, m, err := decodeRecord(r)
		if err != nil {
			corrupt++
			return nil
		}
		if m == nil || m.state == Dead {
			delete(txns, id)
			return nil
		}
		txns[id] = m
		return nil
	})
	if err != nil {
		c.cfg.Logger.Error("loading transaction state partition failed; it is not served", "partition", sp.index, "err", err)
		return err
	}
	if corrupt > 0 {
		c.cfg.Logger.Warn("skipped undecodable transaction state records", "partition", sp.index, "records", corrupt)
	}
	sp.mu.Lock()
	if sp.gone {
		sp.mu.Unlock()
		return nil
	}
	sp.txns = txns
	n := len(txns)
	for _, m := range txns {
		if m.state == PrepareCommit || m.state == PrepareAbort {
			c.completeLocked(sp, m)
		}
	}
	sp.mu.Unlock()
	c.cfg.Logger.Info("loaded transaction state partition", "partition", sp.index, "transactional_ids", n)
	return nil // the set marks it loaded
}

// Unload stops serving p: marker writes in flight stop (the next
// coordinator completes them) and the state is dropped from memory.
func (c *Coordinator) Unload(p int32) { c.parts.Unload(p) }

// Close unloads every partition and waits for loads and marker writers
// to stop.
func (c *Coordinator) Close() {
	c.parts.Close()
	c.parts.Wait() // loads start marker writers: wait for them first
	c.wg.Wait()
}

// unload drops the state of a partition that left the set (its context,
// which marker writes use, has ended).
func (c *Coordinator) unload(part *servedPartition) {
	sp := part.Contents
	sp.mu.Lock()
	sp.gone = true
	sp.txns = map[string]*metadata{}
	sp.mu.Unlock()
}

// Serving returns the state partitions loaded or loading here.
func (c *Coordinator) Serving() map[int32]Log { return c.parts.Serving() }

// AwaitLoaded waits until state partition p is served here and loaded.
func (c *Coordinator) AwaitLoaded(ctx context.Context, p int32) error {
	return c.parts.AwaitLoaded(ctx, p)
}

// partition returns the loaded partition owning id, locked, or
// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) partition(id string) (*statePartition, error) {
	part := c.parts.Get(c.PartitionFor(id))
	if part == nil {
		return nil, kerr.NotCoordinator
	}
	if !part.Loaded() {
		return nil, kerr.CoordinatorLoadInProgress
	}
	sp := part.Contents
	sp.mu.Lock()
	if sp.gone {
		sp.mu.Unlock()
		return nil, kerr.NotCoordinator
	}
	return sp, nil
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// write appends next as id's state and installs it; sp.mu is held.
func (c *Coordinator) write(sp *statePartition, next *metadata) error {
	next.lastUpdate = c.nowMs()
	if err := sp.log.Append([]Record{stateRecord(next)}); err != nil {
		if errors.Is(err, group.ErrNotLoaded) {
			return kerr.NotCoordinator
		}
		c.cfg.Logger.Warn("appending transaction state failed", "transactional_id", next.id, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	sp.txns[next.id] = next
	return nil
}

// InitProducerID gives the producer of a transactional id its producer id
// and a bumped epoch, fencing older instances. expectedPID and
// expectedEpoch are what the producer holds (KIP-360), -1 for none. An
// ongoing transaction of the id is aborted first: the caller gets
// CONCURRENT_TRANSACTIONS and retries.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, error) {
	if id == "" {
		return -1, -1, kerr.InvalidRequest
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	sp, err := c.partition(id)
	if err != nil {
		return -1, -1, err
	}
	defer sp.mu.Unlock()
	m := sp.txns[id]
	if m == nil {
		pid, err := c.allocate(ctx)
		if err != nil {
			c.cfg.Logger.Error("allocating producer id", "err", err)
			return -1, -1, kerr.CoordinatorNotAvailable
		}
		next := &metadata{id: id, producerID: pid, epoch: 0, lastProducerID: -1, lastEpoch: -1,
			timeoutMs: timeoutMs, state: Empty, start: -1, partitions: map[TopicPartition]struct{}{}}
		if err := c.write(sp, next); err != nil {
			return -1, -1, err
		}
		return pid, 0, nil
	}
	if expectedPID >= 0 && expectedPID != m.producerID && expectedPID != m.lastProducerID {
		return -1, -1, kerr.ProducerFenced
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return -1, -1, kerr.ConcurrentTransactions
	case Ongoing:
		// Fence the producer that left a transaction open and abort it.
		if err := c.abortLocked(sp, m); err != nil {
			return -1, -1, err
		}
		return -1, -1, kerr.ConcurrentTransactions
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return -1, -1, kerr.InvalidTxnState
	}
	next := m.clone()
	next.timeoutMs = timeoutMs
	next.partitions = map[TopicPartition]struct{}{}
	next.state, next.start = Empty, -1
	switch {
	case expectedPID < 0 || expectedEpoch < 0 || (expectedPID == m.producerID && expectedEpoch == m.epoch):
		next.lastProducerID, next.lastEpoch = m.producerID, m.epoch
		if m.epoch >= math.MaxInt16-1 {
			pid, err := c.allocate(ctx)
			if err != nil {
				c.cfg.Logger.Error("allocating producer id", "err", err)
				return -1, -1, kerr.CoordinatorNotAvailable
			}
			next.producerID, next.epoch = pid, 0
		} else {
			next.epoch = m.epoch + 1
		}
	case expectedPID == m.lastProducerID && expectedEpoch == m.lastEpoch:
		// A retry of the InitProducerId that made the current epoch.
		return m.producerID, m.epoch, nil
	default:
		return -1, -1, kerr.ProducerFenced
	}
	if err := c.write(sp, next); err != nil {
		return -1, -1, err
	}
	return next.producerID, next.epoch, nil
}

// check validates the producer of a request on id's transaction; sp.mu
// is held.
func check(m *metadata, pid int64, epoch int16) error {
	switch {
	case m == nil || m.producerID != pid:
		return kerr.InvalidProducerIDMapping
	case m.epoch != epoch:
		return kerr.ProducerFenced
	}
	return nil
}

// AddPartitions adds partitions to id's transaction, starting one if none
// is ongoing.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, tps []TopicPartition) error {
	sp, err := c.partition(id)
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	m := sp.txns[id]
	if err := check(m, pid, epoch); err != nil {
		return err
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return kerr.ConcurrentTransactions
	case Ongoing:
		missing := false
		for _, tp := range tps {
			if _, ok := m.partitions[tp]; !ok {
				missing = true
			}
		}
		if !missing {
			return nil
		}
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return kerr.InvalidTxnState
	}
	next := m.clone()
	if m.state != Ongoing {
		next.partitions = map[TopicPartition]struct{}{}
		next.start = c.nowMs()
	}
	next.state = Ongoing
	for _, tp := range tps {
		next.partitions[tp] = struct{}{}
	}
	return c.write(sp, next)
}

// VerifyPartitions reports, for AddPartitionsToTxn v4's verify-only
// entries (KIP-890: a partition leader asking before it appends the first
// transactional batch of a producer), whether each partition is in id's
// ongoing transaction. It changes nothing. As Kafka's
// handleVerifyPartitionsInTransaction: INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED, and CONCURRENT_TRANSACTIONS while the transaction is
// being committed or aborted (its markers may be on their way: the leader
// retries rather than refuse the batch for good).
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, tps []TopicPartition) ([]bool, error) {
	sp, err := c.partition(id)
	if err != nil {
		return nil, err
	}
	defer sp.mu.Unlock()
	m := sp.txns[id]
	if err := check(m, pid, epoch); err != nil {
		return nil, err
	}
	if m.state == PrepareCommit || m.state == PrepareAbort {
		return nil, kerr.ConcurrentTransactions
	}
	out := make([]bool, len(tps))
	for i, tp := range tps {
		_, out[i] = m.partitions[tp]
		out[i] = out[i] && m.state == Ongoing
	}
	return out, nil
}

// EndTxn commits or aborts id's transaction: it is prepared in the log
// before the call returns, and completed (markers, then the Complete
// state) in the background.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool) error {
	sp, err := c.partition(id)
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	m := sp.txns[id]
	if err := check(m, pid, epoch); err != nil {
		return err
	}
	switch {
	case m.state == Ongoing:
	case commit && m.state == CompleteCommit, !commit && m.state == CompleteAbort:
		return nil // a retry
	case commit && m.state == PrepareCommit, !commit && m.state == PrepareAbort:
		return kerr.ConcurrentTransactions
	default:
		return kerr.InvalidTxnState
	}
	next := m.clone()
	next.state = PrepareAbort
	if commit {
		next.state = PrepareCommit
	}
	if err := c.write(sp, next); err != nil {
		return err
	}
	c.completeLocked(sp, next)
	return nil
}

// abortLocked fences m's producer (epoch bump) and aborts its ongoing
// transaction; sp.mu is held.
func (c *Coordinator) abortLocked(sp *statePartition, m *metadata) error {
	next := m.clone()
	if m.epoch < math.MaxInt16 {
		next.epoch = m.epoch + 1
	}
	next.lastProducerID, next.lastEpoch = m.producerID, -1
	next.state = PrepareAbort
	if err := c.write(sp, next); err != nil {
		return err
	}
	c.completeLocked(sp, next)
	return nil
}

// completeLocked writes m's markers in the background and then its
// Complete state; sp.mu is held.
func (c *Coordinator) completeLocked(sp *statePartition, m *metadata) {
	mk := Marker{ProducerID: m.producerID, ProducerEpoch: m.epoch, Commit: m.state == PrepareCommit,
		CoordinatorEpoch: sp.epoch, Partitions: m.sortedPartitions()}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.finish(sp, m, mk)
	}()
}

func (c *Coordinator) finish(sp *statePartition, prepared *metadata, mk Marker) {
	backoff := markerRetryBackoff
	for len(mk.Partitions) > 0 {
		err := c.markers.WriteMarkers(sp.ctx, mk)
		if err == nil {
			break
		}
		if sp.ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrMarkersFenced) {
			c.cfg.Logger.Warn("transaction markers fenced; left to the newer coordinator", "producer_id", mk.ProducerID, "err", err)
			return
		}
		c.cfg.Logger.Warn("writing transaction markers failed; retrying", "producer_id", mk.ProducerID, "err", err)
		select {
		case <-sp.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxMarkerRetryBackoff)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	cur := sp.txns[prepared.id]
	if sp.gone || cur != prepared {
		return
	}
	next := prepared.clone()
	next.state = CompleteAbort
	if mk.Commit {
		next.state = CompleteCommit
	}
	next.partitions = map[TopicPartition]struct{}{}
	if err := c.write(sp, next); err != nil {
		// The prepared state stays; the next load completes it.
		c.cfg.Logger.Warn("writing transaction completion failed", "transactional_id", prepared.id, "err", err)
	}
}

// AbortTimedOut aborts every ongoing transaction older than its timeout,
// fencing its producer; the broker calls it every AbortCheckInterval.
func (c *Coordinator) AbortTimedOut() {
	now := c.nowMs()
	for _, sp := range c.loadedPartitions() {
		sp.mu.Lock()
		for _, m := range sp.txns {
			if sp.gone {
				break
			}
			if m.state == Ongoing && m.start+int64(m.timeoutMs) < now {
				c.cfg.Logger.Info("aborting timed-out transaction", "transactional_id", m.id, "producer_id", m.producerID, "epoch", m.epoch)
				if err := c.abortLocked(sp, m); err != nil {
					c.cfg.Logger.Warn("aborting timed-out transaction failed", "transactional_id", m.id, "err", err)
				}
			}
		}
		sp.mu.Unlock()
	}
}

// RemoveExpired removes transactional ids that have had no transaction for
// IDExpiration (a tombstone in the log); the broker calls it every
// RemoveExpiredInterval.
func (c *Coordinator) RemoveExpired() {
	cutoff := c.nowMs() - c.cfg.IDExpiration.Milliseconds()
	for _, sp := range c.loadedPartitions() {
		sp.mu.Lock()
		for id, m := range sp.txns {
			if sp.gone {
				break
			}
			switch m.state {
			case Empty, CompleteCommit, CompleteAbort:
			default:
				continue
			}
			if m.lastUpdate >= cutoff {
				continue
			}
			if err := sp.log.Append([]Record{tombstone(id)}); err != nil {
				c.cfg.Logger.Warn("removing expired transactional id failed", "transactional_id", id, "err", err)
				continue
			}
			delete(sp.txns, id)
		}
		sp.mu.Unlock()
	}
}

func (c *Coordinator) loadedPartitions() []*statePartition {
	var out []*statePartition
	for _, part := range c.parts.Partitions() {
		if part.Loaded() {
			out = append(out, part.Contents)
		}
	}
	return out
}

// Describe returns id's state, TRANSACTIONAL_ID_NOT_FOUND if it has none.
func (c *Coordinator) Describe(id string) (Transaction, error) {
	sp, err := c.partition(id)
	if err != nil {
		return Transaction{}, err
	}
	defer sp.mu.Unlock()
	m := sp.txns[id]
	if m == nil {
		return Transaction{}, kerr.TransactionalIDNotFound
	}
	return m.public(), nil
}

// List returns the transactional ids of the loaded partitions, and
// whether some partition served here is still loading.
func (c *Coordinator) List() (txns []Transaction, loading bool) {
	for _, part := range c.parts.Partitions() {
		if !part.Loaded() {
			loading = true
			continue
		}
		sp := part.Contents
		sp.mu.Lock()
		for _, m := range sp.txns {
			txns = append(txns, m.public())
		}
		sp.mu.Unlock()
	}
	return txns, loading
}
