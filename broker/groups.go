package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// The group coordinator (broker/group) is wired in here: the broker opens
// the partitions of __consumer_offsets it leads like any other, and
// runGroupLoader hands them to the coordinator (and takes them back) after
// every reconciliation. Offsets are mirrored into the coordination
// service's /consumers registry whenever the broker is part of a cluster
// (ZooKeeper, or memcoord shared by brokers of one process); a standalone
// broker has only its private in-process coordinator, so its log is the
// only store.

// offsetsTopicWait bounds how long FindCoordinator waits for the offsets
// topic it creates; past it the client gets COORDINATOR_NOT_AVAILABLE and
// asks again.
const offsetsTopicWait = 15 * time.Second

// newGroupCoordinator builds the coordinator from the configuration and
// registers its metrics on reg.
func (b *Broker) newGroupCoordinator(reg prometheus.Registerer) error {
	gc := b.cfg.Groups
	gc.Logger = b.logger.With("component", "group-coordinator")
	opts := []group.Option{group.WithPartitionCheck(func(topic string, p int32) bool {
		_, ok := b.metadata().Partition(topic, p)
		return ok
	}), group.WithTopics(b.consumerGroupTopics)}
	if !b.standalone {
		b.groupRegistry = group.NewZooKeeperRegistry(b.connect)
		opts = append(opts, group.WithRegistry(b.groupRegistry))
	}
	c, err := group.New(gc, opts...)
	if err != nil {
		return err
	}
	b.groups = c
	// Markers on __consumer_offsets end pending transactional commits.
	b.SetTxnMarkerListener(c)
	return reg.Register(c.Collector(func(topic string, p int32) (int64, bool) {
		if part := b.partitions.Leader(topic, p); part != nil {
			return part.Log().EndOffset(), true
		}
		return 0, false
	}))
}

// runGroupLoader follows the reconciler: every partition of
// __consumer_offsets and __transaction_state this broker serves is loaded
// into its coordinator, every one it stopped serving is unloaded.
func (b *Broker) runGroupLoader() {
	defer b.wg.Done()
	defer func() {
		b.groups.Close()
		b.txns.Close()
		b.markerSender.close()
		if b.groupRegistry != nil {
			_ = b.groupRegistry.Close()
		}
	}()
	b.wg.Add(2)
	go b.runOffsetExpiry()
	go b.runTxnExpiry()
	for {
		b.mu.RLock()
		ch := b.served
		b.mu.RUnlock()
		b.syncGroupPartitions()
		b.syncTxnPartitions()
		select {
		case <-ch:
		case <-b.shutdownCtx.Done():
			return
		}
	}
}

// internalCoordinator is a coordinator over the partitions of an internal
// topic (the group and the transaction coordinators).
type internalCoordinator interface {
	Partitions() int32
	Serving() map[int32]group.Log
	Unload(p int32)
}

// syncCoordinatorPartitions hands c every partition of topic this broker
// leads (load) and unloads the ones it no longer leads; it reports whether
// some partition was newly loaded.
func (b *Broker) syncCoordinatorPartitions(topic string, c internalCoordinator, load func(p int32, l offsetsLog)) (loading bool) {
	slots := b.replication.Slots(topic)
	serving := c.Serving()
	for p := range c.Partitions() {
		var part *partition.Replica
		if int(p) < len(slots) {
			part = slots[p]
		}
		if part == nil || !part.Leading() {
			if _, ok := serving[p]; ok {
				c.Unload(p)
			}
			continue
		}
		if _, ok := serving[p]; !ok {
			loading = true
		}
		load(p, offsetsLog{b: b, p: part})
	}
	return loading
}

func (b *Broker) syncGroupPartitions() {
	loading := b.syncCoordinatorPartitions(group.OffsetsTopic, b.groups, func(p int32, l offsetsLog) { b.groups.Load(p, l) })
	if t, ok := b.metadata().Topics[group.OffsetsTopic]; loading && ok && offsetsTopicNeedsCompaction(t.Configs) {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ctx, cancel := context.WithTimeout(b.shutdownCtx, 30*time.Second)
			defer cancel()
			if err := b.migrateOffsetsTopic(ctx); err != nil && b.shutdownCtx.Err() == nil {
				b.logger.Warn("offsets topic not migrated to compact; retried at the next load", "err", err)
			}
		}()
	}
}

// runOffsetExpiry deletes expired group offsets every
// offsets.retention.check.interval.ms (Kafka's offsets.retention.minutes).
func (b *Broker) runOffsetExpiry() {
	defer b.wg.Done()
	t := time.NewTicker(b.groups.Config().OffsetsRetentionCheck)
	defer t.Stop()
	for {
		select {
		case <-b.shutdownCtx.Done():
			return
		case <-t.C:
			b.groups.ExpireOffsets()
		}
	}
}

// offsetsTopicConfigs are the overrides __consumer_offsets is created with:
// compacted, as in Kafka, so that it keeps each group's last offsets only.
func (b *Broker) offsetsTopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy": config.PolicyCompact,
		"segment.bytes":  strconv.Itoa(int(b.groups.Config().OffsetsTopicSegmentBytes)),
	}
}

// migrateOffsetsTopic makes an offsets topic created before compaction
// existed (retention.ms=-1, delete policy, growing for ever) compacted.
// Idempotent; called on broker start and when a partition of it is loaded.
func (b *Broker) migrateOffsetsTopic(ctx context.Context) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	t, ok := m.Metadata().Topics[group.OffsetsTopic]
	if !ok || !offsetsTopicNeedsCompaction(t.Configs) {
		return nil
	}
	_, err = m.UpdateTopicConfigs(ctx, group.OffsetsTopic, func(configs map[string]string) error {
		if !offsetsTopicNeedsCompaction(configs) {
			return nil
		}
		configs["cleanup.policy"] = config.PolicyCompact
		if configs["retention.ms"] == "-1" {
			delete(configs, "retention.ms") // compact ignores it; Kafka's topic has none
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("make %s compacted: %w", group.OffsetsTopic, err)
	}
	b.logger.Info("offsets topic migrated to cleanup.policy=compact", "topic", group.OffsetsTopic)
	return nil
}

// offsetsTopicNeedsCompaction: the offsets topic's overrides lack compaction.
func offsetsTopicNeedsCompaction(configs map[string]string) bool {
	p, err := config.ParseCleanupPolicy(configs["cleanup.policy"])
	return configs["cleanup.policy"] == "" || err != nil || p == config.PolicyDelete
}

// ensureOffsetsTopic creates __consumer_offsets on first use, as Kafka
// does, with offsets.topic.num.partitions partitions and
// offsets.topic.replication.factor replicas capped at the live brokers,
// compacted, and waits until its partitions have leaders. An existing one
// still on the delete policy is migrated to compact.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	snap := m.Metadata()
	if t, ok := snap.Topics[group.OffsetsTopic]; ok {
		if int32(len(t.Partitions)) != b.groups.Partitions() {
			return fmt.Errorf("%w: %s has %d partitions, offsets.topic.num.partitions is %d", config.ErrInvalidConfig,
				group.OffsetsTopic, len(t.Partitions), b.groups.Partitions())
		}
		return b.migrateOffsetsTopic(ctx)
	}
	rf := cappedReplication(b.groups.Config().OffsetsReplication, len(snap.Brokers))
	return b.createInternalTopic(ctx, group.OffsetsTopic, b.groups.Partitions(), rf, b.offsetsTopicConfigs())
}

// createInternalTopic creates an internal topic of a coordinator (one
// broker wins the race; the others find it made) and waits until all its
// partitions have leaders.
func (b *Broker) createInternalTopic(ctx context.Context, topic string, partitions int32, rf int16, configs map[string]string) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	err = m.CreateTopic(ctx, topic, partitions, rf, configs)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	if err == nil {
		b.logger.Info("created internal topic", "topic", topic, "partitions", partitions, "replication", rf)
	}
	_, err = m.AwaitMetadata(ctx, func(s cluster.Snapshot) bool {
		t, ok := s.Topics[topic]
		if !ok {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	})
	return err
}

// clientHost is the client's address as DescribeGroups reports it
// ("/127.0.0.1", Kafka's InetAddress.toString form).
func clientHost(r *request) string {
	if r.conn == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(r.conn.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return "/" + host
}

func clientIDOf(r *request) string {
	if r.clientID == nil {
		return ""
	}
	return *r.clientID
}

// offsetsLog is a served partition of the offsets topic as the
// coordinator's group.Log.
type offsetsLog struct {
	b *Broker
	p *partition.Replica
}

// offsetsCommitTimeout is Kafka's offsets.commit.timeout.ms: how long an
// offsets append waits for the partition's in-sync replicas.
const offsetsCommitTimeout = 5 * time.Second

// Append writes the records as one batch stamped with the leader epoch and,
// when the partition has followers in its ISR, waits (up to
// offsetsCommitTimeout) until they have it too, as Kafka's coordinator
// appends with acks=all: a commit acknowledged to a consumer survives the
// coordinator's broker. Past the timeout the commit stands on the leader
// and a warning is logged.
func (l offsetsLog) Append(records []group.Record) error {
	return l.appendBatch(encodeOffsetsBatch(records, time.Now().UnixMilli(), nil))
}

// AppendTxn is group.TxnLog: the records as one transactional batch of the
// producer, at the sequence after its last batch in this partition (0
// for an epoch the partition has not seen), as Kafka's coordinator writes
// TxnOffsetCommit records. The group coordinator serializes a partition's
// appends, so the sequence read is the one the log expects.
func (l offsetsLog) AppendTxn(records []group.Record, producerID int64, producerEpoch int16) error {
	seq := int32(0)
	if tl := l.p.TxnLog(); tl != nil {
		for _, pi := range tl.Producers() {
			if pi.ProducerID == producerID && pi.ProducerEpoch == producerEpoch && pi.LastSequence >= 0 {
				seq = pi.LastSequence + 1
				if seq < 0 { // past MaxInt32 sequences wrap to 0
					seq = 0
				}
			}
		}
	}
	err := l.appendBatch(encodeOffsetsBatch(records, time.Now().UnixMilli(), &txnProducer{producerID, producerEpoch, seq}))
	if errors.Is(err, partlog.ErrInvalidProducerEpoch) {
		return fmt.Errorf("%w: %w", group.ErrProducerFenced, err)
	}
	return err
}

func (l offsetsLog) appendBatch(batch []byte) error {
	stampLeaderEpoch(batch, l.p.LeaderEpoch())
	res, err := l.p.Log().Append(batch)
	if err != nil {
		if errors.Is(err, partlog.ErrClosed) {
			return fmt.Errorf("%w: %w", group.ErrNotLoaded, err)
		}
		return err
	}
	l.b.metrics.observeOffsets(l.p)
	l.p.Wake()
	end := res.LastOffset + 1
	if l.p.HighWatermark() >= end {
		return nil
	}
	short := l.b.partitions.WaitCommitted(l.b.shutdownCtx, time.Now().Add(offsetsCommitTimeout), map[*partition.Replica]int64{l.p: end})
	switch {
	case !short[l.p]:
	case !l.p.Leading():
		return fmt.Errorf("%w: the offsets partition moved to another broker", group.ErrNotLoaded)
	default:
		l.b.res.logs.log(slog.LevelWarn, "offsets-commit-timeout", "offsets commit not replicated within offsets.commit.timeout.ms; it stands on the leader",
			"partition", l.p.Partition(), "offset", res.BaseOffset)
	}
	return nil
}

// Replay reads the partition from its start, batch by batch; compressed
// batches (written by someone else) are decompressed.
func (l offsetsLog) Replay(fn func(group.Record) error) error {
	off, end := l.p.Log().StartOffset(), l.p.Log().EndOffset()
	for off < end {
		v, err := l.p.Log().Read(off, 1<<20)
		if err != nil {
			return err
		}
		data, err := v.Bytes()
		if err != nil {
			v.Release()
			return err
		}
		if len(data) == 0 {
			v.Release()
			return nil // the end lies in a gap the cleaner left
		}
		next, err := replayBatches(data, off, l.b.decompressor, fn)
		v.Release()
		if err != nil {
			return err
		}
		if next <= off {
			return fmt.Errorf("offsets log made no progress at offset %d", off)
		}
		off = next
	}
	return nil
}

// replayBatches calls fn for each record at or after from in data (whole
// batches) and returns the offset after the last batch.
func replayBatches(data []byte, from int64, dec kgo.Decompressor, fn func(group.Record) error) (int64, error) {
	next := from
	for len(data) >= batchHeaderSize {
		size := int(binary.BigEndian.Uint32(data[batchLengthOffset:])) + batchOverheadNoLen
		if size < batchHeaderSize || size > len(data) {
			break
		}
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(data[:size]); err != nil {
			return next, fmt.Errorf("decoding offsets batch: %w", err)
		}
		data = data[size:]
		next = batch.FirstOffset + int64(batch.LastOffsetDelta) + 1
		transactional := batch.Attributes&0x10 != 0
		if batch.Attributes&0x20 != 0 { // control batch: a transaction marker
			if batch.FirstOffset < from || batch.NumRecords < 1 {
				continue
			}
			length, n := binary.Varint(batch.Records)
			if n <= 0 || length < 0 || int64(n)+length > int64(len(batch.Records)) {
				return next, errRecordFraming
			}
			var r kmsg.Record
			if err := r.ReadFrom(batch.Records[:int64(n)+length]); err != nil {
				return next, fmt.Errorf("decoding offsets marker: %w", err)
			}
			var key kmsg.ControlRecordKey
			if err := key.ReadFrom(r.Key); err != nil {
				return next, fmt.Errorf("offsets marker at %d: control key: %w", batch.FirstOffset, err)
			}
			commit := key.Type == kmsg.ControlRecordKeyTypeCommit
			if err := fn(group.Record{ProducerID: batch.ProducerID, Control: true, Commit: commit}); err != nil {
				return next, err
			}
			continue
		}
		records := batch.Records
		if codec := kgo.CompressionCodecType(batch.Attributes & batchCodecMask); codec != kgo.CodecNone {
			var err error
			if records, err = dec.Decompress(records, codec); err != nil {
				return next, fmt.Errorf("decompressing offsets batch: %w", err)
			}
		}
		for range batch.NumRecords {
			length, n := binary.Varint(records)
			if n <= 0 || length < 0 || int64(n)+length > int64(len(records)) {
				return next, errRecordFraming
			}
			var r kmsg.Record
			if err := r.ReadFrom(records[:int64(n)+length]); err != nil {
				return next, fmt.Errorf("decoding offsets record: %w", err)
			}
			records = records[int64(n)+length:]
			if batch.FirstOffset+int64(r.OffsetDelta) < from {
				continue
			}
			rec := group.Record{Key: r.Key, Value: r.Value}
			if transactional {
				rec.ProducerID, rec.Transactional = batch.ProducerID, true
			}
			if err := fn(rec); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}

// txnProducer is the producer of a transactional offsets batch.
type txnProducer struct {
	id       int64
	epoch    int16
	sequence int32
}

// encodeOffsetsBatch builds one uncompressed magic-2 batch of records,
// transactional when txn is set.
func encodeOffsetsBatch(records []group.Record, now int64, txn *txnProducer) []byte {
	var recs []byte
	for i, rec := range records {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key, r.Value = rec.Key, rec.Value
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // the zero length took one byte
		recs = r.AppendTo(recs)
	}
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              recs,
	}
	if txn != nil {
		batch.Attributes |= 0x10
		batch.ProducerID, batch.ProducerEpoch, batch.FirstSequence = txn.id, txn.epoch, txn.sequence
	}
	out := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-batchOverheadNoLen))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32.Checksum(out[batchAttributesOff:], castagnoli))
	return out
}
