package client

import (
	"context"
	"fmt"
	"time"
)

// seekRequest asks the run loop to move an owned partition.
type seekRequest struct {
	tp     topicPartition
	offset int64
	at     time.Time
	byTime bool
	reply  chan error
}

// Seek rewinds (or advances) an owned partition: its next message is the
// one at offset, and the next commit records that. It fails with
// ErrNotOwned for a partition this member does not own now. Fetching
// restarts, which waits up to rebalance.backoff.ms for loop bodies running
// now (including the caller's, when Seek is called from a loop body).
func (g *GroupConsumer) Seek(ctx context.Context, topic string, partition int32, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: seek to negative offset %d", ErrInvalidConfig, offset)
	}
	return g.seek(ctx, seekRequest{tp: topicPartition{topic, partition}, offset: offset})
}

// SeekToTime moves an owned partition to the first message whose timestamp
// is at or after t (found with ListOffsets), or to its end when there is
// none: replay after a bug fix (paper §3.1).
func (g *GroupConsumer) SeekToTime(ctx context.Context, topic string, partition int32, t time.Time) error {
	return g.seek(ctx, seekRequest{tp: topicPartition{topic, partition}, at: t, byTime: true})
}

func (g *GroupConsumer) seek(ctx context.Context, r seekRequest) error {
	g.mu.Lock()
	joined := g.sub != nil
	g.mu.Unlock()
	if !joined {
		return fmt.Errorf("%w: %s-%d: consumer has not joined", ErrNotOwned, r.tp.topic, r.tp.partition)
	}
	r.reply = make(chan error, 1)
	select {
	case g.seeks <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.ctx.Done():
		return ErrClosed
	}
	select {
	case err := <-r.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// doSeek runs in the run loop: it ends the generation, and starts a new one
// over the same partitions with the sought partition moved.
func (g *GroupConsumer) doSeek(ctx context.Context, r seekRequest) error {
	g.mu.Lock()
	_, owned := g.owned[r.tp]
	adm := g.adm
	g.mu.Unlock()
	if !owned {
		return fmt.Errorf("%w: %s-%d", ErrNotOwned, r.tp.topic, r.tp.partition)
	}
	target := r.offset
	if r.byTime {
		off, err := offsetAtTime(ctx, adm, r.tp.topic, r.tp.partition, r.at)
		if err != nil {
			return err
		}
		target = off
	}
	g.stopFetching(true)
	g.mu.Lock()
	next := make(map[topicPartition]*partitionState, len(g.owned))
	for tp, old := range g.owned {
		ps := &partitionState{tp: tp, stream: old.stream}
		ps.consumed.Store(old.consumed.Load())
		ps.committed.Store(old.committed.Load())
		next[tp] = ps
	}
	if ps := next[r.tp]; ps != nil {
		ps.consumed.Store(target)
	}
	g.owned = next
	g.mu.Unlock()
	if err := g.startFetching(ctx, next); err != nil {
		// Fetching is down with ownership held: rebalance to recover.
		g.requestRebalance()
		return err
	}
	g.logger.Info("seek", "topic", r.tp.topic, "partition", r.tp.partition, "offset", target)
	return nil
}
