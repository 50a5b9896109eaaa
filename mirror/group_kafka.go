package mirror

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/network"
)

// kafkaGroup consumes a source through its brokers' group coordinator (the
// Kafka group protocol, franz-go's group consumer): what Apache Kafka
// sources offer. Offsets are marked when the target acknowledged
// (AutoCommitMarks) and committed every offset.commit.interval.ms; a
// revocation first waits for the revoked partitions' records to be
// acknowledged, then commits.
type kafkaGroup struct {
	s *source

	mu     sync.Mutex
	cl     *kgo.Client // nil until the first topic
	own    map[string][]int32
	cancel context.CancelFunc
	done   chan struct{}
}

func newKafkaGroup(s *source) *kafkaGroup { return &kafkaGroup{s: s, own: map[string][]int32{}} }

func (k *kafkaGroup) add(intake context.Context, topic string, _ int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cl != nil {
		k.cl.AddConsumeTopics(topic)
		return
	}
	c := k.s.m.cfg
	reset := kgo.NewOffset().AtStart()
	if !c.resetEarliest() {
		reset = kgo.NewOffset().AtEnd()
	}
	log := k.s.log
	cl, err := network.NewClient(network.ClientConfig{Brokers: k.s.cfg.Brokers, ClientID: c.ClientID, Logger: log}.Secured(k.s.cfg.Security),
		kgo.ConsumerGroup(c.GroupID),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxBytes(c.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(c.FetchPartitionBytes),
		kgo.FetchMaxWait(c.FetchMaxWait),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(c.CommitInterval),
		kgo.AutoCommitCallback(func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				k.s.committed()
			}
		}),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			k.s.m.metrics.rebalances.WithLabelValues(k.s.cfg.Name).Inc()
			k.mu.Lock()
			for t, ps := range assigned {
				k.own[t] = sortedUnion(k.own[t], ps)
			}
			owned := maps.Clone(k.own)
			k.mu.Unlock()
			log.Info("rebalanced: partitions assigned", "assigned", assigned, "owned", owned)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
			k.revoke(ctx, cl, revoked, true)
		}),
		kgo.OnPartitionsLost(func(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
			k.revoke(ctx, cl, lost, false)
		}),
	)
	if err != nil {
		// Options are built from a validated Config; this is a bug.
		log.Error("source group client", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(intake)
	k.cl, k.cancel, k.done = cl, cancel, make(chan struct{})
	go k.poll(ctx, cl)
}

// revoke forgets partitions; when they are revoked (not lost), it first
// waits for their records to be acknowledged and commits, so that the next
// owner starts right after them.
func (k *kafkaGroup) revoke(ctx context.Context, cl *kgo.Client, parts map[string][]int32, commit bool) {
	k.mu.Lock()
	for t, ps := range parts {
		k.own[t] = slices.DeleteFunc(k.own[t], func(p int32) bool { return slices.Contains(ps, p) })
		if len(k.own[t]) == 0 {
			delete(k.own, t)
		}
	}
	k.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	if commit {
		dctx, cancel := context.WithTimeout(ctx, k.s.m.cfg.ShutdownTimeout)
		defer cancel()
		if err := k.s.m.drained(dctx, k.s.cfg.Name, parts); err != nil {
			k.s.log.Warn("revoked partitions not fully acknowledged; their next owner repeats the rest", "err", err)
		}
		if err := k.s.m.releaseMarks(dctx); err != nil {
			k.s.log.Warn("publishing the audit counts on revoke failed; the next owner repeats what they cover", "err", err)
		}
		if err := cl.CommitMarkedOffsets(dctx); err != nil {
			k.s.log.Warn("commit on revoke failed", "err", err)
		} else {
			k.s.committed()
		}
	}
	k.s.log.Info("rebalanced: partitions revoked", "revoked", parts, "lost", !commit)
}

func (k *kafkaGroup) poll(ctx context.Context, cl *kgo.Client) {
	defer close(k.done)
	m, src := k.s.m, k.s.cfg.Name
	for {
		fs := cl.PollRecords(ctx, 10_000)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				k.s.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
			}
		})
		var ps *partState
		fs.EachRecord(func(r *kgo.Record) {
			if ps == nil || ps.partition != r.Partition || ps.topic != r.Topic {
				ps = m.part(src, r.Topic, r.Partition)
			}
			if ps.halted.Load() || ctx.Err() != nil {
				return
			}
			out := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			out.Headers = make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+1)
			copy(out.Headers, r.Headers)
			m.produce(ctx, ps, r.Offset, out, func(int64) { cl.MarkCommitRecords(r) })
		})
		cl.AllowRebalance()
	}
}

func (k *kafkaGroup) remove(_ context.Context, topic string) {
	k.mu.Lock()
	cl := k.cl
	k.mu.Unlock()
	if cl != nil {
		cl.PurgeTopicsFromConsuming(topic)
	}
}

func (k *kafkaGroup) owned() map[string][]int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string][]int32, len(k.own))
	for t, ps := range k.own {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (k *kafkaGroup) stopIntake() {
	k.mu.Lock()
	cancel, done := k.cancel, k.done
	k.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// close runs after the producer drained: commit the marks, leave.
func (k *kafkaGroup) close(ctx context.Context) error {
	k.mu.Lock()
	cl := k.cl
	k.mu.Unlock()
	if cl == nil {
		return nil
	}
	err := cl.CommitMarkedOffsets(ctx)
	if err == nil {
		k.s.committed()
	}
	// Leaving revokes: the callback finds everything acknowledged.
	cl.Close()
	return err
}

func sortedUnion(a, b []int32) []int32 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
