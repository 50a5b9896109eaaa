package mirror

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client"
)

// zkGroup consumes a source through the paper's ZooKeeper consumer groups:
// one client.GroupConsumer per topic (a consumer's subscription is fixed
// when it joins, and a topic found later must not disturb the others'
// streams more than a rebalance does), one stream per partition, offsets
// marked only when the target acknowledged (ManualMark).
type zkGroup struct {
	s  *source
	mu sync.Mutex
	// topics are the joined (or joining) consumers.
	topics map[string]*zkTopic
	wg     sync.WaitGroup // stream loops and joins
}

type zkTopic struct {
	cancel context.CancelFunc
	done   chan struct{} // the join and every stream loop have returned
	mu     sync.Mutex
	g      *client.GroupConsumer // nil until joined
	wg     sync.WaitGroup
}

func newZKGroup(s *source) *zkGroup { return &zkGroup{s: s, topics: map[string]*zkTopic{}} }

func (z *zkGroup) config() client.GroupConfig {
	c := z.s.m.cfg
	reset := client.ResetSmallest
	if !c.resetEarliest() {
		reset = client.ResetLargest
	}
	return client.GroupConfig{
		GroupID:                 c.GroupID,
		Brokers:                 z.s.cfg.Brokers,
		Security:                z.s.cfg.Security,
		ZooKeeperConnect:        z.s.cfg.ZooKeeperConnect,
		Coordinator:             z.s.cfg.Coordinator,
		ZooKeeperSessionTimeout: c.ZooKeeperSessionTimeout,
		AutoOffsetReset:         reset,
		DisableAutoCommit:       true, // commit() below, to know when it last succeeded
		ManualMark:              true,
		RebalanceBackoff:        c.RebalanceBackoff,
		QueuedMaxChunks:         c.QueuedChunks,
		FetchMaxWait:            c.FetchMaxWait,
		FetchMaxPartitionBytes:  c.FetchPartitionBytes,
		Logger:                  z.s.log,
	}
}

func (z *zkGroup) add(intake context.Context, topic string, partitions int) {
	ctx, cancel := context.WithCancel(intake)
	zt := &zkTopic{cancel: cancel, done: make(chan struct{})}
	z.mu.Lock()
	z.topics[topic] = zt
	z.mu.Unlock()
	z.wg.Add(1)
	go func() {
		defer z.wg.Done()
		defer close(zt.done)
		g := z.join(ctx, topic, partitions, zt)
		if g == nil {
			return
		}
		t := time.NewTicker(z.s.m.cfg.CommitInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				zt.wg.Wait()
				return
			case <-t.C:
				if err := g.CommitOffsets(ctx); err != nil {
					if ctx.Err() == nil {
						z.s.log.Warn("offset commit failed", "topic", topic, "err", err)
					}
				} else {
					z.s.committed()
				}
			}
		}
	}()
}

// join creates and joins the topic's consumer, retrying until it works or
// ctx ends, and starts a loop per stream.
func (z *zkGroup) join(ctx context.Context, topic string, partitions int, zt *zkTopic) *client.GroupConsumer {
	for ctx.Err() == nil {
		g, err := client.NewGroupConsumer(ctx, z.config())
		if err == nil {
			zt.mu.Lock()
			zt.g = g
			zt.mu.Unlock()
			var streams []*client.Stream
			streams, err = g.CreateMessageStreams(ctx, topic, max(1, partitions))
			if err == nil {
				for _, st := range streams {
					zt.wg.Add(1)
					go func() { defer zt.wg.Done(); z.consume(ctx, g, st) }()
				}
				return g
			}
			_ = g.Close(context.Background())
			zt.mu.Lock()
			zt.g = nil
			zt.mu.Unlock()
		}
		if ctx.Err() != nil {
			break
		}
		z.s.log.Warn("joining the ZooKeeper consumer group failed; retrying", "topic", topic, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(z.s.m.cfg.RebalanceBackoff):
		}
	}
	return nil
}

// consume hands one stream's messages to the producer.
func (z *zkGroup) consume(ctx context.Context, g *client.GroupConsumer, st *client.Stream) {
	m, src := z.s.m, z.s.cfg.Name
	var ps *partState
	for msg, err := range st.All(ctx) {
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			z.s.log.Warn("consumer group", "topic", st.Topic(), "err", err)
			continue
		}
		if ps == nil || ps.partition != msg.Partition {
			ps = m.part(src, msg.Topic, msg.Partition)
		}
		if ps.halted.Load() {
			continue
		}
		rec := &kgo.Record{Key: msg.Key, Value: msg.Value, Timestamp: msg.Timestamp}
		rec.Headers = make([]kgo.RecordHeader, len(msg.Headers), len(msg.Headers)+1)
		for i, h := range msg.Headers {
			rec.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
		topic, p := msg.Topic, msg.Partition
		m.produce(ctx, ps, msg.Offset, rec, func(next int64) { g.MarkHandled(topic, p, next) })
	}
}

func (z *zkGroup) remove(ctx context.Context, topic string) {
	z.mu.Lock()
	zt := z.topics[topic]
	delete(z.topics, topic)
	z.mu.Unlock()
	if zt == nil {
		return
	}
	zt.cancel()
	<-zt.done
	zt.mu.Lock()
	g := zt.g
	zt.mu.Unlock()
	if g != nil {
		_ = g.Close(ctx)
	}
}

func (z *zkGroup) owned() map[string][]int32 {
	z.mu.Lock()
	topics := maps.Clone(z.topics)
	z.mu.Unlock()
	out := map[string][]int32{}
	for _, zt := range topics {
		zt.mu.Lock()
		g := zt.g
		zt.mu.Unlock()
		if g != nil {
			maps.Copy(out, g.Owned())
		}
	}
	return out
}

func (z *zkGroup) stopIntake() {
	z.mu.Lock()
	for _, zt := range z.topics {
		zt.cancel()
	}
	z.mu.Unlock()
	z.wg.Wait()
}

// close runs after the producer drained: Close commits every marked offset
// (and waits, up to rebalance.backoff.ms, for marks still arriving).
func (z *zkGroup) close(ctx context.Context) error {
	z.mu.Lock()
	topics := maps.Clone(z.topics)
	z.mu.Unlock()
	var errs []error
	for _, zt := range topics {
		zt.mu.Lock()
		g := zt.g
		zt.mu.Unlock()
		if g == nil {
			continue
		}
		if err := g.Close(ctx); err != nil {
			errs = append(errs, err)
		} else {
			z.s.committed()
		}
	}
	return errors.Join(errs...)
}
