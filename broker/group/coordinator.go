package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/partset"
)

// Log is one partition of the offsets topic, as the coordinator uses it.
type Log interface {
	// Append writes the records durably, in order, as one batch (the
	// broker's waits for the partition's in-sync replicas too). An error
	// wrapping ErrNotLoaded means the partition is no longer served here.
	Append(records []Record) error
	// Replay calls fn with every record of the partition in offset order.
	Replay(fn func(Record) error) error
}

// TopicPartition names a partition of a consumed topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// RegistryOffset is an offset found in the registry.
type RegistryOffset struct {
	TopicPartition
	Offset int64
	// Modified is when the registry last wrote it.
	Modified time.Time
}

// Registry mirrors committed offsets into another store that other tools
// read: the paper's ZooKeeper consumer registry (see ZooKeeperRegistry).
// Writes are best effort: a failure is logged, never returned to clients.
type Registry interface {
	// Store writes the offsets of one group.
	Store(ctx context.Context, group string, offsets []RegistryOffset) error
	// Remove deletes offsets of one group; nil tps removes all of them.
	Remove(ctx context.Context, group string, tps []TopicPartition) error
	// Load returns the offsets of every group for which owns is true.
	Load(ctx context.Context, owns func(group string) bool) (map[string][]RegistryOffset, error)
}

// Coordinator is the group coordinator of one broker: the groups of the
// offsets-topic partitions this broker leads, loaded with Load and dropped
// with Unload as leadership moves.
type Coordinator struct {
	cfg      Config
	registry Registry
	// partitionExists says whether a consumed topic partition exists; nil
	// accepts every commit.
	partitionExists func(topic string, p int32) bool
	// topics lists the cluster's topics for consumer-protocol
	// subscriptions; nil means none.
	topics func() map[string]TopicMeta

	// parts are the offsets partitions served here, loading or loaded.
	parts *partset.Set[Log, *offsetsPartition]
	// mu guards the contents of every partition of parts (groups,
	// lateMarkers); a partition is marked loaded under it.
	mu sync.Mutex
}

// servedPartition is an offsets partition of the set, with its contents.
type servedPartition = partset.Partition[Log, *offsetsPartition]

// offsetsPartition is the contents of one loaded (or loading) offsets
// partition.
type offsetsPartition struct {
	index int32
	log   Log
	// writeMu serializes appends, so that the log, the memory and the
	// registry see commits in one order. Taken before a group's mu.
	writeMu sync.Mutex
	// groups is guarded by Coordinator.mu.
	groups map[string]*group
	// loadedAt is when loading finished (ms): offsets read back count as
	// committed no earlier (see ExpireOffsets).
	loadedAt int64
	// txnGroups names, per producer id, the groups holding its pending
	// transactional offsets; guarded by writeMu. lateMarkers, guarded by
	// Coordinator.mu, are markers that arrived while loading (applied
	// after: the replay may have missed them).
	txnGroups   map[int64]map[string]bool
	lateMarkers []txnMarker
	// appends counts the records of the partition's log, in log order:
	// the replay's at load, then one per append (guarded by writeMu, which
	// orders the appends). It stamps committed.pos.
	appends int64
}

// nextPos is the position of an append just made; writeMu is held.
func (ps *offsetsPartition) nextPos() int64 {
	ps.appends++
	return ps.appends
}

// Option adjusts a Coordinator.
type Option func(*Coordinator)

// WithRegistry mirrors offsets into r and reads them back on load.
func WithRegistry(r Registry) Option { return func(c *Coordinator) { c.registry = r } }

// WithPartitionCheck makes commits for partitions that do not exist fail
// with UNKNOWN_TOPIC_OR_PARTITION.
func WithPartitionCheck(exists func(topic string, p int32) bool) Option {
	return func(c *Coordinator) { c.partitionExists = exists }
}

// WithTopics gives the coordinator the cluster's topics, which
// consumer-protocol groups subscribe to (by name or regex) and assign.
func WithTopics(topics func() map[string]TopicMeta) Option {
	return func(c *Coordinator) { c.topics = topics }
}

func (c *Coordinator) topicMetadata() map[string]TopicMeta {
	if c.topics == nil {
		return map[string]TopicMeta{}
	}
	return c.topics()
}

// New returns a coordinator serving no partition yet.
func New(cfg Config, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg.withDefaults()}
	c.parts = partset.New(partset.Hooks[Log, *offsetsPartition]{
		New: func(p *servedPartition) *offsetsPartition {
			return &offsetsPartition{index: p.Index, log: p.Log, groups: map[string]*group{}, txnGroups: map[int64]map[string]bool{}}
		},
		Load:   c.load,
		Unload: c.unload,
	})
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Partitions is the partition count of the offsets topic.
func (c *Coordinator) Partitions() int32 { return c.cfg.OffsetsTopicPartitions }

// Config returns the effective configuration.
func (c *Coordinator) Config() Config { return c.cfg }

// PartitionFor is the offsets partition owning group.
func (c *Coordinator) PartitionFor(group string) int32 {
	return PartitionFor(group, c.cfg.OffsetsTopicPartitions)
}

// Load makes this coordinator serve offsets partition p from log: the
// groups are read back in the background (requests for them meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS). Loading the log already loaded is a
// no-op; another log replaces it (the old one is unloaded first).
func (c *Coordinator) Load(p int32, log Log) { c.parts.Load(p, log, 0) }

// Loaded reports whether p is served and fully loaded.
func (c *Coordinator) Loaded(p int32) bool { return c.parts.Loaded(p) }

// AwaitLoaded waits until offsets partition p is served here and fully
// loaded, so that requests for its groups get neither NOT_COORDINATOR nor
// COORDINATOR_LOAD_IN_PROGRESS; it returns ctx's error if ctx ends first.
// The broker's FindCoordinator calls it before naming itself: the leader
// in the metadata is not yet a coordinator until the broker has opened the
// partition and the coordinator has read it back.
func (c *Coordinator) AwaitLoaded(ctx context.Context, p int32) error {
	return c.parts.AwaitLoaded(ctx, p)
}

// Serving returns the offsets partitions loaded or loading here.
func (c *Coordinator) Serving() map[int32]Log { return c.parts.Serving() }

// Unload stops serving p: waiting joins and syncs get NOT_COORDINATOR and
// the groups are dropped from memory (their offsets stay in the log).
func (c *Coordinator) Unload(p int32) { c.parts.Unload(p) }

// Close unloads every partition.
func (c *Coordinator) Close() { c.parts.Close() }

// unload drops the groups of a partition that left the set.
func (c *Coordinator) unload(part *servedPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := part.Contents
	for _, g := range ps.groups {
		g.mu.Lock()
		g.unload()
		g.mu.Unlock()
	}
	ps.groups = map[string]*group{}
}

// load replays the log, then overlays the registry: an offset the registry
// wrote later than the log's commit (made while another broker was the
// coordinator and not replicated to this log) wins.
// It never fails: a log that cannot be read back is served with what was
// read.
func (c *Coordinator) load(part *servedPartition) error {
	ps := part.Contents
	start := c.cfg.Now()
	offsets := map[string]map[TopicPartition]committed{}
	pending := txnReplay{}
	consumers := cgReplay{}
	var corrupt int
	var pos int64
	err := ps.log.Replay(func(r Record) error {
		pos++
		if r.Control {
			pending.end(r.ProducerID, r.Commit, offsets)
			return nil
		}
		if typ, ok := consumerRecordType(r.Key); ok {
			if err := consumers.apply(typ, r); err != nil {
				corrupt++
			}
			return nil
		}
		d, err := decodeRecord(r)
		if err != nil {
			corrupt++
			return nil
		}
		if !d.isOffset {
			return nil
		}
		tp := TopicPartition{d.topic, d.partition}
		if d.value != nil {
			d.value.pos = pos
		}
		if r.Transactional {
			pending.add(r.ProducerID, d.group, tp, replayed{d.value, pos})
			return nil
		}
		if d.value == nil {
			delete(offsets[d.group], tp)
			pending.drop(d.group, tp)
			return nil
		}
		if offsets[d.group] == nil {
			offsets[d.group] = map[TopicPartition]committed{}
		}
		offsets[d.group][tp] = *d.value
		return nil
	})
	if err != nil {
		c.cfg.Logger.Error("loading offsets partition failed; its groups start without offsets", "partition", ps.index, "err", err)
	}
	if corrupt > 0 {
		c.cfg.Logger.Warn("skipped undecodable records of the offsets topic", "partition", ps.index, "records", corrupt)
	}
	fromRegistry := 0
	if c.registry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		reg, err := c.registry.Load(ctx, func(g string) bool { return c.PartitionFor(g) == ps.index })
		cancel()
		if err != nil {
			c.cfg.Logger.Warn("reading offsets from the registry failed; serving the log's", "partition", ps.index, "err", err)
		}
		for g, offs := range reg {
			for _, o := range offs {
				cur, ok := offsets[g][o.TopicPartition]
				if ok && (cur.Offset == o.Offset || o.Modified.UnixMilli() <= cur.CommitTime) {
					continue
				}
				if offsets[g] == nil {
					offsets[g] = map[TopicPartition]committed{}
				}
				// Its place among the log's records is unknown: an open
				// transaction's offset committing later replaces it.
				offsets[g][o.TopicPartition] = committed{Offset: o.Offset, LeaderEpoch: -1, CommitTime: o.Modified.UnixMilli()}
				fromRegistry++
			}
		}
	}
	// The install and the mark are one step under c.mu: TxnMarker queues
	// a marker in lateMarkers only while the partition is not loaded.
	c.mu.Lock()
	defer c.mu.Unlock()
	if !part.Served() {
		return nil // unloaded meanwhile (or replaced by a newer load)
	}
	ps.appends = pos
	for id, offs := range offsets {
		if len(offs) == 0 {
			continue
		}
		g := c.newGroup(ps, id)
		for tp, o := range offs {
			g.setOffset(tp.Topic, tp.Partition, o)
		}
		ps.groups[id] = g
	}
	for id, l := range consumers {
		if !l.exists {
			continue
		}
		g := ps.groups[id]
		if g == nil {
			g = c.newGroup(ps, id)
			ps.groups[id] = g
		}
		g.mu.Lock()
		g.installConsumer(l)
		g.mu.Unlock()
	}
	c.installPendingLocked(ps, pending)
	for _, m := range ps.lateMarkers {
		groups := map[string]*group{}
		for id := range ps.txnGroups[m.producerID] {
			groups[id] = ps.groups[id]
		}
		c.applyMarker(ps, m, groups)
	}
	ps.lateMarkers = nil
	ps.loadedAt = c.cfg.Now().UnixMilli()
	if part.MarkLoaded() {
		c.cfg.Logger.Info("loaded offsets partition", "partition", ps.index, "groups", len(ps.groups),
			"from_registry", fromRegistry, "took", c.cfg.Now().Sub(start))
	}
	return nil
}

// lookup finds the group's partition and the group (created when create
// is set and it does not exist); code is NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when this broker cannot serve it.
func (c *Coordinator) lookup(id string, create bool) (*group, *offsetsPartition, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	part := c.parts.Get(c.PartitionFor(id))
	if part == nil {
		return nil, nil, kerr.NotCoordinator.Code
	}
	if !part.Loaded() {
		return nil, nil, kerr.CoordinatorLoadInProgress.Code
	}
	ps := part.Contents
	g := ps.groups[id]
	if g == nil && create {
		g = c.newGroup(ps, id)
		ps.groups[id] = g
	}
	return g, ps, 0
}

// CoordinatorError returns the error code for requests about group on this
// broker: 0, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) CoordinatorError(group string) int16 {
	_, _, code := c.lookup(group, false)
	return code
}

// forget removes a deleted group, if it is still the one mapped.
func (c *Coordinator) forget(ps *offsetsPartition, g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps.groups[g.id] == g {
		delete(ps.groups, g.id)
	}
}

// allGroups returns the groups of every loaded partition.
func (c *Coordinator) allGroups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*group
	for _, part := range c.parts.Partitions() {
		if !part.Loaded() {
			continue
		}
		for _, g := range part.Contents.groups {
			out = append(out, g)
		}
	}
	return out
}

// appendCode maps a failed append to the code Kafka sends for it.
func (c *Coordinator) appendCode(err error) int16 {
	if errors.Is(err, ErrNotLoaded) {
		return kerr.NotCoordinator.Code
	}
	c.cfg.Logger.Error("writing to the offsets topic failed", "err", err)
	return kerr.UnknownServerError.Code
}

// newMemberID is Kafka's: the client id (or instance id) and a UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}
