package mirror

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/mirror/origin"
)

// ErrFenced is returned by Run in exactly.once mode when a newer mirror
// process with the same transactional.id took over (this one is a zombie).
var ErrFenced = errors.New("mirror: fenced by a newer instance with the same transactional.id")

// eosMaxRecords bounds the records of one transaction.
const eosMaxRecords = 10_000

// validateExactlyOnce checks the settings exactly.once=true cannot work
// with; each error names its key.
func (c Config) validateExactlyOnce() []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if !c.ExactlyOnce {
		if c.TransactionalIDPrefix != "" {
			bad("transactional.id.prefix is set but exactly.once is not true")
		}
		return errs
	}
	for _, s := range c.Sources {
		if s.zkGroups() {
			bad("source.%s.zookeeper.connect: exactly.once=true stores the source offsets on the target, in the transaction of the records; the ZooKeeper consumer groups keep them in the source's ZooKeeper, outside it (remove the key, or set exactly.once=false)", s.Name)
		}
	}
	if c.TransactionalIDPrefix != "" && len(c.TransactionalIDPrefix) > 200 {
		bad("transactional.id.prefix: longer than 200 characters")
	}
	return errs
}

// transactionalID is the target producer's transactional.id for source.
func (c Config) transactionalID(source string) string {
	return c.TransactionalIDPrefix + "-" + source
}

// offsetsGroup is the target consumer group holding source's offsets.
func (c Config) offsetsGroup(source string) string { return c.GroupID + "-" + source }

// eosGroup mirrors one source exactly once (exactly.once=true): it reads
// every partition of the mirrored topics with isolation.level
// read_committed, starting at the offsets stored in the target group
// offsetsGroup (auto.offset.reset where none), and writes each poll in one
// target transaction: the records, the audit events counting them, and
// (AddOffsetsToTxn, TxnOffsetCommit) the source offsets after them.
// One process per configuration does the work: a process started with the
// same configuration fences the running one (InitProducerId bumps the
// transactional.id's epoch and aborts its open transaction), which then
// stops with ErrFenced.
type eosGroup struct {
	s     *source
	txnID string
	group string
	// idPrefix and seq make the IDs of the audit events this process writes.
	idPrefix string
	seq      uint64
	// unended is set when an abort failed: the producer is still in that
	// transaction (run's goroutine only).
	unended bool

	mu     sync.Mutex
	cl     *kgo.Client // source consumer; nil until the first topic
	tcl    *kgo.Client // transactional target producer
	parts  map[string]int
	cancel context.CancelFunc
	done   chan struct{}
}

func newEOSGroup(s *source) *eosGroup {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &eosGroup{s: s, txnID: s.m.cfg.transactionalID(s.cfg.Name), group: s.m.cfg.offsetsGroup(s.cfg.Name),
		idPrefix: hex.EncodeToString(id[:]) + "-", parts: map[string]int{}}
}

// start opens the transactional producer (fencing an older instance) and
// the read_committed consumer.
func (e *eosGroup) start(intake context.Context) error {
	m := e.s.m
	c := m.cfg
	codec, err := compression(c.Compression)
	if err != nil {
		return err
	}
	tcl, err := network.NewClient(network.ClientConfig{Brokers: c.TargetBrokers, ClientID: c.ClientID, Logger: e.s.log.With("client", "target-txn")}.Secured(c.TargetSecurity),
		kgo.TransactionalID(e.txnID),
		kgo.TransactionTimeout(c.TransactionTimeout),
		kgo.RecordPartitioner(mirrorPartitioner()),
		kgo.ProducerLinger(max(c.Linger, 0)),
		kgo.ProducerBatchMaxBytesFn(m.batchBytes),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(max(c.BufferRecords, eosMaxRecords+1000)),
		kgo.MaxBufferedBytes(int(c.BufferBytes)),
		kgo.UnknownTopicRetries(-1),
		// A grown target topic's new partitions are waited for inside a
		// transaction: learn them soon.
		kgo.MetadataMinAge(time.Second),
	)
	if err != nil {
		return fmt.Errorf("mirror: source %s: transactional target client: %w", e.s.cfg.Name, err)
	}
	// InitProducerId: from here on an older process with this
	// transactional.id is fenced and its open transaction aborted.
	for {
		_, _, err = tcl.ProducerID(intake)
		if err == nil {
			break
		}
		if intake.Err() != nil || fenced(err) {
			tcl.Close()
			return fmt.Errorf("mirror: source %s: initializing transactional.id %s: %w", e.s.cfg.Name, e.txnID, err)
		}
		e.s.log.Warn("initializing the transactional producer failed; retrying", "transactional_id", e.txnID, "err", err)
		select {
		case <-intake.Done():
		case <-time.After(time.Second):
		}
	}
	if !c.AuditDisable {
		if err := audit.EnsureTopic(intake, tcl, audit.DefaultTopic); err != nil {
			e.s.log.Warn("the target's audit topic is not there yet", "err", err)
		}
	}
	reset := kgo.NewOffset().AtStart()
	if !c.resetEarliest() {
		reset = kgo.NewOffset().AtEnd()
	}
	cl, err := network.NewClient(network.ClientConfig{Brokers: e.s.cfg.Brokers, ClientID: c.ClientID, Logger: e.s.log}.Secured(e.s.cfg.Security),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(c.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(c.FetchPartitionBytes),
		kgo.FetchMaxWait(c.FetchMaxWait),
	)
	if err != nil {
		tcl.Close()
		return fmt.Errorf("mirror: source %s: %w", e.s.cfg.Name, err)
	}
	ctx, cancel := context.WithCancel(intake)
	e.cl, e.tcl, e.cancel, e.done = cl, tcl, cancel, make(chan struct{})
	e.s.log.Info("exactly-once mirroring", "transactional_id", e.txnID, "offsets_group", e.group)
	go e.run(ctx)
	return nil
}

func (e *eosGroup) add(intake context.Context, topic string, partitions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cl == nil {
		if err := e.start(intake); err != nil {
			e.s.m.fail(err)
			return
		}
	}
	e.growLocked(intake, topic, partitions)
}

// grow starts the partitions a source topic gained.
func (e *eosGroup) grow(ctx context.Context, topic string, partitions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cl != nil {
		e.growLocked(ctx, topic, partitions)
	}
}

func (e *eosGroup) growLocked(ctx context.Context, topic string, partitions int) {
	have := e.parts[topic]
	if partitions <= have {
		return
	}
	stored, err := e.stored(ctx)
	for err != nil {
		if ctx.Err() != nil {
			return
		}
		e.s.log.Warn("reading the source offsets stored on the target failed; retrying", "group", e.group, "err", err)
		time.Sleep(time.Second)
		stored, err = e.stored(ctx)
	}
	add := map[int32]kgo.Offset{}
	for p := int32(have); p < int32(partitions); p++ {
		add[p] = kgo.NewOffset().AtStart()
		if !e.s.m.cfg.resetEarliest() {
			add[p] = kgo.NewOffset().AtEnd()
		}
		if off, ok := stored[topic][p]; ok {
			add[p] = kgo.NewOffset().At(off)
		}
	}
	e.s.log.Info("exactly-once: consuming", "topic", topic, "partitions", len(add), "stored_offsets", len(stored[topic]))
	e.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: add})
	e.parts[topic] = partitions
}

// stored reads the source offsets committed in the target group, waiting
// out transactions still open on them (OffsetFetch require_stable).
func (e *eosGroup) stored(ctx context.Context) (map[string]map[int32]int64, error) {
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = e.group
		req.RequireStable = true
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = e.group
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, e.tcl)
		if err != nil {
			return nil, err
		}
		out := map[string]map[int32]int64{}
		code := resp.ErrorCode
		type part struct {
			t   string
			p   int32
			off int64
			c   int16
		}
		var got []part
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				got = append(got, part{t.Topic, p.Partition, p.Offset, p.ErrorCode})
			}
		}
		for _, g := range resp.Groups {
			code = max(code, g.ErrorCode)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					got = append(got, part{t.Topic, p.Partition, p.Offset, p.ErrorCode})
				}
			}
		}
		for _, p := range got {
			if p.c != 0 {
				code = p.c
			}
		}
		if err := kerr.ErrorForCode(code); err != nil {
			if errors.Is(err, kerr.UnstableOffsetCommit) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			return nil, fmt.Errorf("OffsetFetch of group %s on the target: %w", e.group, err)
		}
		for _, p := range got {
			if p.off < 0 {
				continue
			}
			if out[p.t] == nil {
				out[p.t] = map[int32]int64{}
			}
			out[p.t][p.p] = p.off
		}
		return out, nil
	}
}

func (e *eosGroup) run(ctx context.Context) {
	defer close(e.done)
	backoff := 100 * time.Millisecond
	for {
		fs := e.cl.PollRecords(ctx, eosMaxRecords)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				e.s.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		// The transaction runs to its end even when intake stops, so that
		// a drain commits what it fetched.
		tctx, cancel := context.WithTimeout(context.Background(), e.s.m.cfg.TransactionTimeout)
		err := e.transact(tctx, fs)
		cancel()
		if err == nil {
			backoff = 100 * time.Millisecond
			continue
		}
		if fenced(err) {
			e.s.m.fail(fmt.Errorf("%w: source %s transactional.id %s: %w", ErrFenced, e.s.cfg.Name, e.txnID, err))
			return
		}
		e.s.log.Warn("exactly-once transaction aborted; its records are fetched again", "transactional_id", e.txnID, "err", err)
		if err := e.rewind(ctx, fs); err != nil && ctx.Err() == nil {
			e.s.m.fail(fmt.Errorf("mirror: source %s: rewinding after an aborted transaction: %w", e.s.cfg.Name, err))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// mirrorPartitioner keeps a mirrored record's partition and spreads the
// audit events (Partition -1) by their key, (a hash of the key).
func mirrorPartitioner() kgo.Partitioner {
	hash := kgo.KafkaHasher(crc32.ChecksumIEEE)
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return func(r *kgo.Record, n int) int {
			if r.Partition >= 0 {
				return int(r.Partition)
			}
			return hash(r.Key, n)
		}
	})
}

// fenced reports whether err means a newer producer took the
// transactional.id over (or it may not be used). INVALID_PRODUCER_EPOCH is
// not: a transaction the coordinator timed out (a target outage) bumps the
// epoch too, and franz-go recovers from it (KIP-360) unless a newer
// producer holds the id, when the recovery gets PRODUCER_FENCED.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

type auditCell struct {
	topic  string
	window time.Time
}

// eosBatch is what one transaction covers.
type eosBatch struct {
	next map[string]map[int32]int64 // source offsets after the records
	last map[*partState]int64
	// records and bytes per partition, for the metrics.
	records, bytes map[*partState]int64
	counts         map[auditCell][2]int64 // records, bytes
}

// transact writes the records of fs, their audit counts and their source
// offsets in one target transaction, aborting it on any error.
func (e *eosGroup) transact(ctx context.Context, fs kgo.Fetches) (err error) {
	if e.unended {
		// A previous abort did not get through: end that transaction first.
		if err := e.abort(); err != nil {
			return err
		}
	}
	if err := e.tcl.BeginTransaction(); err != nil {
		return err
	}
	committing := false
	defer func() {
		if err == nil || committing {
			return
		}
		if aerr := e.abort(); aerr != nil {
			err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
		}
	}()
	var perr firstErr
	b, err := e.produce(ctx, fs, &perr)
	if err != nil {
		return err
	}
	if len(b.last) == 0 {
		return e.tcl.EndTransaction(ctx, kgo.TryAbort) // nothing written
	}
	if err := e.produceCounts(ctx, b, &perr); err != nil {
		return err
	}
	if err := e.tcl.Flush(ctx); err != nil {
		return err
	}
	if err := perr.get(); err != nil {
		return err
	}
	if err := e.commitOffsets(ctx, b.next); err != nil {
		return err
	}
	committing = true
	if err := e.tcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// The outcome may be unknown: the rewind reads the stored offsets.
		if aerr := e.abort(); aerr != nil {
			err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
		}
		return err
	}
	m := e.s.m
	now := time.Now().UnixNano()
	for ps, off := range b.last {
		ps.acked.Store(off)
		ps.records.Add(float64(b.records[ps]))
		ps.bytes.Add(float64(b.bytes[ps]))
	}
	m.lastAck.Store(now)
	e.s.committed()
	return nil
}

// abort drops what is buffered and ends the open transaction with an
// abort, on a context of its own (the transaction's may have expired); when
// that fails too, unended makes the next transact try again first.
func (e *eosGroup) abort() error {
	ctx, cancel := context.WithTimeout(context.Background(), e.s.m.cfg.TransactionTimeout)
	defer cancel()
	_ = e.tcl.AbortBufferedRecords(ctx)
	err := e.tcl.EndTransaction(ctx, kgo.TryAbort)
	e.unended = err != nil
	return err
}

// firstErr keeps the first error of the produce promises of a transaction.
type firstErr struct {
	mu  sync.Mutex
	err error
}

func (f *firstErr) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstErr) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// produce hands the records of fs to the transactional producer, with
// their origin headers. A record that cannot fit the target topic's
// max.message.bytes stops its partition (ErrPartitionStopped): its offset
// and those after it are never committed.
func (e *eosGroup) produce(ctx context.Context, fs kgo.Fetches, perr *firstErr) (*eosBatch, error) {
	m, src := e.s.m, e.s.cfg.Name
	b := &eosBatch{next: map[string]map[int32]int64{}, last: map[*partState]int64{},
		records: map[*partState]int64{}, bytes: map[*partState]int64{}, counts: map[auditCell][2]int64{}}
	window := m.cfg.AuditWindow
	if window == 0 {
		window = audit.DefaultWindow
	}
	var ps *partState
	var err error
	fs.EachRecord(func(r *kgo.Record) {
		if err != nil {
			return
		}
		if ps == nil || ps.partition != r.Partition || ps.topic != r.Topic {
			ps = m.part(src, r.Topic, r.Partition)
		}
		if ps.halted.Load() {
			return
		}
		if b.next[r.Topic] == nil {
			b.next[r.Topic] = map[int32]int64{}
		}
		if m.cfg.looped(r.Headers) {
			// From the target: not mirrored back, its offset committed with the poll.
			b.next[r.Topic][r.Partition] = r.Offset + 1
			return
		}
		out := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Topic: ps.target, Partition: ps.partition}
		out.Headers = make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+1)
		copy(out.Headers, r.Headers)
		if size := recordSize(out); size > int(m.batchBytes(ps.target)) {
			m.halt(ps, r.Offset, fmt.Errorf("%w: a %d-byte record does not fit a batch of the target topic (max.message.bytes / producer.batch.size %d)",
				kerr.MessageTooLarge, size, m.batchBytes(ps.target)))
			e.cl.PauseFetchPartitions(map[string][]int32{r.Topic: {r.Partition}})
			return
		}
		if !ps.targetKnown.Load() {
			if err = m.awaitTargetPartition(ctx, e.tcl, ps); err != nil {
				return
			}
		}
		out.Headers = append(out.Headers, kgo.RecordHeader{Key: origin.Header, Value: origin.Append(make([]byte, 0, len(src)+24), src, ps.partition, r.Offset)})
		ps.sent.Store(r.Offset + 1)
		e.tcl.Produce(ctx, out, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.set(err)
			}
		})
		b.next[r.Topic][r.Partition] = r.Offset + 1
		b.last[ps] = r.Offset + 1
		size := int64(len(r.Key) + len(r.Value))
		b.records[ps]++
		b.bytes[ps] += size
		if ps.target != AuditTopic {
			k := auditCell{ps.target, audit.WindowStart(r.Timestamp, window)}
			c := b.counts[k]
			b.counts[k] = [2]int64{c[0] + 1, c[1] + size}
		}
	})
	return b, err
}

// produceCounts writes the audit events of the batch (tier "mirror") into
// its transaction: they are visible to read_committed readers of __audit
// exactly when the records they count are.
func (e *eosGroup) produceCounts(ctx context.Context, b *eosBatch, perr *firstErr) error {
	c := e.s.m.cfg
	if c.AuditDisable || len(b.counts) == 0 {
		return nil
	}
	window := c.AuditWindow
	if window == 0 {
		window = audit.DefaultWindow
	}
	instance := c.instance()
	now := time.Now()
	for _, k := range slices.SortedFunc(maps.Keys(b.counts), func(a, b auditCell) int {
		if a.topic != b.topic {
			return cmp.Compare(a.topic, b.topic)
		}
		return a.window.Compare(b.window)
	}) {
		n := b.counts[k]
		e.seq++
		v, err := audit.MarshalEvent(audit.Event{
			ID: e.idPrefix + strconv.FormatUint(e.seq, 10), Tier: audit.TierMirror, Cluster: c.TargetName,
			Instance: instance, Topic: k.topic, WindowStart: k.window, Window: window,
			Count: n[0], Bytes: n[1], EmittedAt: now,
		})
		if err != nil {
			return err
		}
		e.tcl.Produce(ctx, &kgo.Record{Topic: audit.DefaultTopic, Partition: -1, Key: []byte(instance), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.set(fmt.Errorf("audit event: %w", err))
			}
		})
	}
	return nil
}

// commitOffsets adds the offsets group to the transaction and commits the
// source offsets in it (AddOffsetsToTxn, TxnOffsetCommit).
func (e *eosGroup) commitOffsets(ctx context.Context, next map[string]map[int32]int64) error {
	id, epoch, err := e.tcl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = e.txnID, id, epoch, e.group
	aresp, err := add.RequestWith(ctx, e.tcl)
	if err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	if err := kerr.ErrorForCode(aresp.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = e.txnID, e.group, id, epoch
	req.Generation = -1
	for _, topic := range slices.Sorted(maps.Keys(next)) {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range slices.Sorted(maps.Keys(next[topic])) {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, next[topic][p], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, e.tcl)
	if err != nil {
		return fmt.Errorf("TxnOffsetCommit: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit %s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// rewind sets the partitions of an aborted batch back to the offsets
// stored on the target (the first offset fetched where none is stored),
// so that their records are fetched and written again.
func (e *eosGroup) rewind(ctx context.Context, fs kgo.Fetches) error {
	first := map[string]map[int32]kgo.EpochOffset{}
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		if first[p.Topic] == nil {
			first[p.Topic] = map[int32]kgo.EpochOffset{}
		}
		if _, ok := first[p.Topic][p.Partition]; !ok {
			first[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: -1, Offset: p.Records[0].Offset}
		}
	})
	var stored map[string]map[int32]int64
	var err error
	for {
		if stored, err = e.stored(ctx); err == nil {
			break
		}
		if ctx.Err() != nil || fenced(err) {
			return err
		}
		e.s.log.Warn("reading the source offsets stored on the target failed; retrying", "group", e.group, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	for t, ps := range first {
		for p := range ps {
			if off, ok := stored[t][p]; ok {
				ps[p] = kgo.EpochOffset{Epoch: -1, Offset: off}
			}
		}
	}
	e.cl.SetOffsets(first)
	return nil
}

func (e *eosGroup) remove(_ context.Context, topic string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cl != nil {
		e.cl.PurgeTopicsFromConsuming(topic)
		delete(e.parts, topic)
	}
}

func (e *eosGroup) owned() map[string][]int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]int32{}
	for t, n := range e.parts {
		for p := range int32(n) {
			out[t] = append(out[t], p)
		}
	}
	return out
}

func (e *eosGroup) stopIntake() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// close runs after stopIntake: every transaction ended, nothing to commit.
func (e *eosGroup) close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cl != nil {
		e.cl.Close()
		e.tcl.Close()
	}
	return nil
}
