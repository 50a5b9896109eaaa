package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/mirror/origin"
)

// Counter is what the mirror tells of every record the target
// acknowledged: audit.Counter satisfies it.
type Counter interface {
	Count(topic string, recordTimestamp time.Time, records, bytes int64)
	// Flush publishes everything counted so far and waits for it to be
	// acknowledged: the mirror commits a source offset only after the
	// counts of the records before it were flushed.
	Flush(ctx context.Context) error
	Close(ctx context.Context) error
}

// Mirror copies the matching topics of every source cluster into the
// target cluster. See the package doc for its guarantees.
type Mirror struct {
	cfg     Config
	log     *slog.Logger
	include *regexp.Regexp
	exclude *regexp.Regexp
	metrics *metrics
	counter Counter
	marks   marks

	target *kgo.Client
	tadm   *kadm.Client

	sources []*source

	mu    sync.Mutex
	parts map[partKey]*partState
	// made holds target topics known to exist, with their partition count.
	made map[string]int

	lastAck atomic.Int64 // unix nanos of the latest acknowledgement

	// fatal receives the error that stops Run before its ctx ends (an
	// exactly-once mirror fenced by a newer instance).
	fatal chan error

	// syncs records where acknowledged records landed on the target, with
	// checkpoints on (syncs.go); nil otherwise.
	syncs *syncWriter

	// maxMessage holds each target topic's max.message.bytes (int32).
	maxMessage sync.Map
}

// batchBytes is the largest batch for a target topic.
func (m *Mirror) batchBytes(topic string) int32 {
	if v, ok := m.maxMessage.Load(topic); ok {
		return min(m.cfg.BatchBytes, v.(int32))
	}
	return m.cfg.BatchBytes
}

type partKey struct {
	source, topic string
	partition     int32
}

// partState is one source partition as this process mirrors it.
type partState struct {
	source    string
	topic     string
	target    string
	partition int32
	// sent is the offset after the last record handed to the producer,
	// acked the offset after the last one the target acknowledged.
	sent  atomic.Int64
	acked atomic.Int64
	// halted is set when the partition stopped, at the record haltedAt:
	// records after it are neither sent nor marked; those before it still are.
	halted   atomic.Bool
	haltedAt atomic.Int64
	// haltedSince is when (unix nanos) it stopped; the source restarts its
	// consumer to retry after stopped.partition.retry.ms (retry.go).
	haltedSince atomic.Int64
	// reported is set when the stop was logged and counted in
	// tributary_mirror_stopped_partitions (not for a stop by shutdown);
	// retriable when its cause is one a new consumer can get past once an
	// operator fixed it (retriable).
	reported  atomic.Bool
	retriable atomic.Bool
	// pending is the latest mark not yet given to the group, held until
	// the audit counts of the records before it are published (marks.go).
	pending atomic.Pointer[pendingMark]
	// skipped is the latest record passed over as come from the target
	// (skip), marked once the record sent before it is acknowledged.
	skipped atomic.Pointer[skippedMark]
	// targetKnown is set once the target producer is known to have the
	// target partition in its metadata (grow.go).
	targetKnown atomic.Bool
	records     prometheus.Counter
	bytes       prometheus.Counter
}

// New validates cfg and builds a Mirror; it connects to nothing until Run.
// counter receives the acknowledged records (tier "mirror"); nil counts
// nothing (see NewAuditCounter).
func New(cfg Config, counter Counter) (*Mirror, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("mirror: registering metrics: %w", err)
	}
	m := &Mirror{
		cfg:     cfg,
		log:     cfg.Logger,
		include: regexp.MustCompile(`^(?:` + cfg.Topics + `)$`),
		metrics: met,
		counter: counter,
		parts:   map[partKey]*partState{},
		made:    map[string]int{},
		fatal:   make(chan error, 1),
	}
	if cfg.TopicsExclude != "" {
		m.exclude = regexp.MustCompile(`^(?:` + cfg.TopicsExclude + `)$`)
	}
	if cfg.checkpoints() {
		m.syncs = newSyncWriter(m)
	}
	for _, sc := range cfg.Sources {
		m.sources = append(m.sources, &source{m: m, cfg: sc, log: m.log.With("source", sc.Name), active: map[string]int{}})
	}
	return m, nil
}

// instance names this process.
func (c Config) instance() string {
	if c.Instance != "" {
		return c.Instance
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// mirrored reports whether a source topic is to be mirrored.
func (m *Mirror) mirrored(topic string) bool {
	if topic == AuditTopic {
		return !m.cfg.AuditDisable
	}
	if strings.HasPrefix(topic, "__") || m.cfg.internalTopic(topic) {
		return false // internal topics: consumer offsets, Connect's, MirrorMaker 2's, ours
	}
	if m.cfg.isCycle(topic) {
		return false // it came from the target: mirroring it back would loop
	}
	return m.include.MatchString(topic) && (m.exclude == nil || !m.exclude.MatchString(topic))
}

// Run mirrors until ctx ends, then stops fetching, waits (up to
// shutdown.timeout.ms) for the target to acknowledge what is in flight,
// commits and returns. It returns an error only when it could not start or
// could not drain and commit.
func (m *Mirror) Run(ctx context.Context) error {
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	codec, err := compression(m.cfg.Compression)
	if err != nil {
		return err
	}
	m.target, err = network.NewClient(network.ClientConfig{Brokers: m.cfg.TargetBrokers, ClientID: m.cfg.ClientID, Logger: m.log.With("client", "target")}.Secured(m.cfg.TargetSecurity),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(max(m.cfg.Linger, 0)),
		// A batch never exceeds the target topic's max.message.bytes, so
		// that only a record too large by itself is refused (and that one
		// alone, naming its offset), as the Java producer's batch.size does.
		kgo.ProducerBatchMaxBytesFn(m.batchBytes),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(m.cfg.BufferRecords),
		kgo.MaxBufferedBytes(int(m.cfg.BufferBytes)),
		// The target may be down or not know a new topic yet: retry for
		// ever rather than fail records (the stall watchdog logs).
		kgo.UnknownTopicRetries(-1),
	)
	if err != nil {
		return fmt.Errorf("mirror: target client: %w", err)
	}
	defer m.target.Close()
	m.tadm = kadm.NewClient(m.target)
	m.lastAck.Store(time.Now().UnixNano())

	for _, s := range m.sources {
		if err := s.open(); err != nil {
			return err
		}
	}
	var cps *checkpointer
	if m.syncs != nil {
		names := []string{OffsetSyncsTopic}
		for _, s := range m.sources {
			names = append(names, m.cfg.CheckpointsTopic(s.cfg.Name))
		}
		for _, name := range names {
			if err := createInternal(ctx, m.tadm, m.cfg.TargetReplicationFactor, name); err != nil {
				return err
			}
		}
		if cps, err = newCheckpointer(m); err != nil {
			return err
		}
	}
	intake, stopIntake := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range m.sources {
		wg.Add(1)
		go func() { defer wg.Done(); s.discover(ctx, intake) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.watch(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); m.releaseLoop(ctx) }()
	if cps != nil {
		wg.Add(1)
		go func() { defer wg.Done(); cps.run(ctx) }()
	}
	m.log.Info("mirror started", "sources", len(m.sources), "target", m.cfg.TargetName, "topics", m.cfg.Topics)
	var fatal error
	select {
	case <-ctx.Done():
	case fatal = <-m.fatal:
		m.log.Error("mirror stopping", "err", fatal)
		cancelRun()
	}

	// Drain: no new records in, everything in flight acknowledged, then
	// commit what was acknowledged and leave the groups.
	stopIntake()
	wg.Wait()
	for _, s := range m.sources {
		s.stopIntake()
	}
	dctx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if err := m.target.Flush(dctx); err != nil {
		errs = append(errs, fmt.Errorf("mirror: waiting for the target to acknowledge in-flight records: %w", err))
	}
	if m.syncs != nil {
		if err := m.syncs.flush(dctx); err != nil {
			errs = append(errs, fmt.Errorf("mirror: %w", err))
		}
	}
	if err := m.releaseMarks(dctx); err != nil {
		errs = append(errs, fmt.Errorf("mirror: publishing the audit counts before the last commit (the offsets since the last published counts stay uncommitted): %w", err))
	}
	for _, s := range m.sources {
		if err := s.close(dctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.counter != nil {
		if err := m.counter.Close(dctx); err != nil {
			errs = append(errs, fmt.Errorf("mirror: audit: %w", err))
		}
	}
	if fatal != nil {
		errs = append([]error{fatal}, errs...)
	}
	m.log.Info("mirror stopped", "err", errors.Join(errs...))
	return errors.Join(errs...)
}

func compression(name string) (kgo.CompressionCodec, error) {
	if codec, ok := network.Compression(name); ok {
		return codec, nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%w: producer.compression.type %q", ErrInvalidConfig, name)
}

// part returns the state of a source partition, creating it.
func (m *Mirror) part(source, topic string, partition int32) *partState {
	k := partKey{source, topic, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.parts[k]
	if ps == nil {
		ps = &partState{
			source: source, topic: topic, partition: partition,
			target:  m.cfg.targetTopic(source, topic),
			records: m.metrics.records.WithLabelValues(source, topic),
			bytes:   m.metrics.bytes.WithLabelValues(source, topic),
		}
		ps.sent.Store(-1)
		ps.acked.Store(-1)
		ps.haltedAt.Store(math.MaxInt64)
		m.parts[k] = ps
	}
	return ps
}

// produce sends rec, the record at offset off of ps's partition, to the
// target, blocking while buffer.max.records or buffer.memory is reached
// (that is the back-pressure: the caller stops fetching). mark is called
// with off+1 once the target acknowledged rec and every record of the
// partition before it.
func (m *Mirror) produce(ctx context.Context, ps *partState, off int64, rec *kgo.Record, mark func(next int64)) {
	if m.cfg.looped(rec.Headers) {
		m.skip(ps, off, mark)
		return
	}
	rec.Topic, rec.Partition = ps.target, ps.partition
	// A record that cannot fit the target topic's max.message.bytes is
	// refused here, before any later record of its partition is sent: a
	// refusal reported by the producer comes after those are on their way.
	if size := recordSize(rec); size > int(m.batchBytes(ps.target)) {
		m.halt(ps, off, fmt.Errorf("%w: a %d-byte record does not fit a batch of the target topic (max.message.bytes / producer.batch.size %d)",
			kerr.MessageTooLarge, size, m.batchBytes(ps.target)))
		return
	}
	if !ps.targetKnown.Load() {
		if err := m.awaitTargetPartition(ctx, m.target, ps); err != nil {
			m.halt(ps, off, err)
			return
		}
	}
	rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: origin.Header, Value: origin.Append(make([]byte, 0, len(ps.source)+24), ps.source, ps.partition, off)})
	ps.sent.Store(off + 1)
	m.target.Produce(ctx, rec, func(r *kgo.Record, err error) {
		// franz-go calls the promises of one target partition in order, and
		// a source partition goes to one target partition: once a record
		// failed, no later one of its partition may be marked.
		if err != nil {
			m.halt(ps, off, err)
			return
		}
		if ps.halted.Load() && off >= ps.haltedAt.Load() {
			return
		}
		ps.acked.Store(off + 1)
		m.lastAck.Store(time.Now().UnixNano())
		if m.syncs != nil {
			m.syncs.acked(ps, off, r.Offset)
		}
		defer func() {
			if sk := ps.skipped.Load(); sk != nil && sk.after == off {
				m.markSkipped(ps, &sk.pendingMark)
			}
		}()
		size := int64(len(r.Key) + len(r.Value))
		ps.records.Inc()
		ps.bytes.Add(float64(size))
		if m.counter == nil {
			mark(off + 1)
			return
		}
		// Counted first, marked once the count is published (marks.go):
		// an offset is never committed before the audit has its record.
		if ps.target != AuditTopic {
			m.counter.Count(ps.target, r.Timestamp, 1, size)
		}
		ps.storePending(&pendingMark{next: off + 1, mark: mark})
	})
}

// skip passes over a record that came from the target (Config.looped).
// When nothing of its partition is in flight it is marked at once;
// otherwise the acknowledgement of the last record sent marks it (after
// its own), so that a partition ending with such records still commits
// to its end.
func (m *Mirror) skip(ps *partState, off int64, mark func(next int64)) {
	last := ps.sent.Load() - 1
	ps.skipped.Store(&skippedMark{after: last, pendingMark: pendingMark{next: off + 1, mark: mark}})
	// Idle (now or since): nobody else will mark it. Marked twice when the
	// promise also saw it: marks never move back.
	if ps.acked.Load() == ps.sent.Load() {
		m.markSkipped(ps, &pendingMark{next: off + 1, mark: mark})
	}
}

func (m *Mirror) markSkipped(ps *partState, pm *pendingMark) {
	if m.counter == nil {
		pm.mark(pm.next)
		return
	}
	ps.storePending(pm)
}

// skippedMark is a skipped record's mark, to be given after the record at
// offset after is acknowledged.
type skippedMark struct {
	after int64
	pendingMark
}

// storePending keeps the latest of the pending marks.
func (ps *partState) storePending(pm *pendingMark) {
	for {
		cur := ps.pending.Load()
		if cur != nil && cur.next >= pm.next {
			return
		}
		if ps.pending.CompareAndSwap(cur, pm) {
			return
		}
	}
}

// recordSize bounds a record's size in a batch: its fields, their length
// varints and attributes, the origin header still to come, and the
// batch header (61 bytes).
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value) + 61 + 32 + len(origin.Header) + 40
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// halt stops a partition at the record the target did not take. Its
// offset is never committed past that record, so a restart retries it.
func (m *Mirror) halt(ps *partState, off int64, err error) {
	// The earliest refused record wins (a producer's refusal and this
	// goroutine's own may race); haltedAt is set before halted, so that a
	// promise that sees halted sees where.
	for {
		cur := ps.haltedAt.Load()
		if off >= cur {
			return
		}
		if ps.haltedAt.CompareAndSwap(cur, off) {
			break
		}
	}
	if ps.halted.Swap(true) {
		return // logged already, for a later record
	}
	ps.haltedSince.Store(time.Now().UnixNano())
	if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return // shutting down: what was not sent is sent by the next owner
	}
	retry := retriable(err) && m.cfg.StoppedRetry > 0
	ps.retriable.Store(retry)
	ps.reported.Store(true)
	m.metrics.stopped.Inc()
	then := "it stays stopped until the mirror restarts"
	if retry {
		then = "retried after stopped.partition.retry.ms (" + m.cfg.StoppedRetry.String() + ")"
	}
	m.log.Error("partition stopped: the target refused a record",
		"err", fmt.Errorf("%w: source %s topic %s partition %d offset %d (target topic %s): %v",
			ErrPartitionStopped, ps.source, ps.topic, ps.partition, off, ps.target, err),
		"source", ps.source, "topic", ps.topic, "partition", ps.partition, "offset", off, "then", then)
}

// retriable reports whether a stop for err may end by itself: the target
// refused for want of an ACL, which an operator grants, and a new consumer
// (retryStopped) then sends the refused record again. A record too large
// is not: raising the target topic's max.message.bytes takes a restart of
// the mirror, because the producer keeps a partition's batch limit from its
// first use (franz-go's ProducerBatchMaxBytesFn), and a retry would send
// the records after the refused one again and again.
func retriable(err error) bool {
	for _, code := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.SaslAuthenticationFailed, kerr.DelegationTokenAuthorizationFailed} {
		if errors.Is(err, code) {
			return true
		}
	}
	return false
}

// drained waits until every record sent for the given partitions of source
// was acknowledged (or the partition halted), or ctx ends.
func (m *Mirror) drained(ctx context.Context, source string, parts map[string][]int32) error {
	for {
		pending := 0
		m.mu.Lock()
		for topic, ps := range parts {
			for _, p := range ps {
				st := m.parts[partKey{source, topic, p}]
				if st != nil && !st.halted.Load() && st.acked.Load() < st.sent.Load() {
					pending++
				}
			}
		}
		m.mu.Unlock()
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d partitions still unacknowledged: %w", pending, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// watch updates the gauges and logs when the target stops acknowledging.
func (m *Mirror) watch(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var warned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		buffered := m.target.BufferedProduceRecords()
		m.metrics.bufferedRecords.Set(float64(buffered))
		m.metrics.bufferedBytes.Set(float64(m.target.BufferedProduceBytes()))
		since := time.Since(time.Unix(0, m.lastAck.Load()))
		if buffered > 0 && since > 10*time.Second && time.Since(warned) > 10*time.Second {
			warned = time.Now()
			m.log.Warn("the target has not acknowledged anything; retrying with back-off",
				"since", since.Round(time.Second), "buffered_records", buffered)
		}
		for _, s := range m.sources {
			s.updateLag(ctx)
		}
	}
}

// fail stops Run with err (the first one wins).
func (m *Mirror) fail(err error) {
	select {
	case m.fatal <- err:
	default:
	}
}
