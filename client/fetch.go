package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
)

// partitionState is one owned partition during one fetch generation.
// consumed is the next offset to hand out, advanced when the loop body of a
// message returns; committed is what the offset registry holds (-1: none).
// With ManualMark, consumed advances by MarkHandled instead, and delivered
// is the offset after the last message handed to a loop body.
type partitionState struct {
	tp        topicPartition
	stream    *Stream
	consumed  atomic.Int64
	committed atomic.Int64
	delivered atomic.Int64
}

// fetcher is the franz-go client fetching one generation's partitions.
type fetcher struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startFetching consumes states from their consumed offsets, handing
// chunks to the partitions' streams.
func (g *GroupConsumer) startFetching(ctx context.Context, states map[topicPartition]*partitionState) error {
	if len(states) == 0 {
		return nil
	}
	g.mu.Lock()
	sess := g.sess
	g.mu.Unlock()
	seeds, err := g.seeds(ctx, sess)
	if err != nil {
		return err
	}
	offsets := map[string]map[int32]kgo.Offset{}
	for tp, ps := range states {
		if offsets[tp.topic] == nil {
			offsets[tp.topic] = map[int32]kgo.Offset{}
		}
		offsets[tp.topic][tp.partition] = kgo.NewOffset().At(ps.consumed.Load())
	}
	reset := kgo.NewOffset().AtEnd()
	if g.cfg.resetSmallest() {
		reset = kgo.NewOffset().AtStart()
	}
	cl, err := network.NewClient(network.ClientConfig{Brokers: seeds, Logger: g.logger}.Secured(g.cfg.Security),
		kgo.ConsumePartitions(offsets),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(orDuration(g.cfg.FetchMaxWait, DefaultFetchMaxWait)),
		kgo.FetchMaxPartitionBytes(g.cfg.fetchPartitionBytes()),
	)
	if err != nil {
		return fmt.Errorf("client: group %s: fetch client: %w", g.cfg.GroupID, err)
	}
	fctx, cancel := context.WithCancel(g.ctx)
	f := &fetcher{cl: cl, cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	g.fetch = f
	g.mu.Unlock()
	go g.fetchLoop(fctx, f, g.gen.Load(), states)
	return nil
}

func (g *GroupConsumer) fetchLoop(ctx context.Context, f *fetcher, gen uint64, states map[topicPartition]*partitionState) {
	defer close(f.done)
	for {
		fs := f.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			g.logger.Warn("fetch error", "topic", topic, "partition", p, "err", err)
		})
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			if len(ftp.Records) == 0 || ctx.Err() != nil {
				return
			}
			ps := states[topicPartition{ftp.Topic, ftp.Partition}]
			if ps == nil {
				return
			}
			backing := make([]Message, len(ftp.Records))
			msgs := make([]*Message, len(ftp.Records))
			for i, r := range ftp.Records {
				msgs[i] = messageFromRecord(&backing[i], r)
			}
			select {
			case ps.stream.ch <- chunk{gen: gen, ps: ps, msgs: msgs}:
			case <-ctx.Done():
			}
		})
	}
}

// stopFetching is stopFetchingCtx bounded by the consumer's own context.
func (g *GroupConsumer) stopFetching(commit bool) {
	if err := g.stopFetchingCtx(g.ctx, commit); err != nil {
		g.logger.Warn("commit failed", "err", err)
	}
}

// stopFetchingCtx ends the current generation: it stops the fetcher, drops
// queued chunks, waits (up to rebalance.backoff.ms) for loop bodies running
// now and, with commit, commits what the application has handled.
func (g *GroupConsumer) stopFetchingCtx(ctx context.Context, commit bool) error {
	g.gen.Add(1)
	g.mu.Lock()
	f := g.fetch
	g.fetch = nil
	streams := g.streams
	g.mu.Unlock()
	if f != nil {
		f.cancel()
		<-f.done
		f.cl.Close()
	}
	g.waitInflight(g.backoff())
	for _, ss := range streams {
		for _, s := range ss {
			s.drain()
		}
	}
	if commit {
		return g.CommitOffsets(ctx)
	}
	return nil
}

// waitInflight waits until no loop body runs (and, with ManualMark, every
// message handed out is marked), or d passes. A message not handled by then
// is seen again by the partition's next owner (at-least-once).
func (g *GroupConsumer) waitInflight(d time.Duration) {
	deadline := time.Now().Add(d)
	for (g.inflight.Load() > 0 || g.unmarked()) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// unmarked reports whether, with ManualMark, a message handed out is not
// marked yet.
func (g *GroupConsumer) unmarked() bool {
	if !g.cfg.ManualMark {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ps := range g.owned {
		if ps.consumed.Load() < ps.delivered.Load() {
			return true
		}
	}
	return false
}
