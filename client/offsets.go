package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// CommitOffsets writes, for every owned partition, the offset after the
// last message whose loop body has returned, to
// /consumers/<group>/offsets/<topic>/<partition>. It never commits past a
// message the application has not finished with, so a crash loses nothing
// (at-least-once). Unchanged offsets are not rewritten.
func (g *GroupConsumer) CommitOffsets(ctx context.Context) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	states := slices.Collect(maps.Values(g.owned))
	sess := g.sess
	g.mu.Unlock()
	var errs []error
	for _, ps := range states {
		off := ps.consumed.Load()
		if off < 0 || off == ps.committed.Load() {
			continue
		}
		if err := writeOffset(ctx, sess, g.cfg.GroupID, ps.tp.topic, ps.tp.partition, off); err != nil {
			errs = append(errs, fmt.Errorf("committing %s-%d: %w", ps.tp.topic, ps.tp.partition, err))
			continue
		}
		ps.committed.Store(off)
	}
	return errors.Join(errs...)
}

// MarkHandled records, with GroupConfig.ManualMark, that the messages of
// topic's partition before offset next are handled, so that the next commit
// may write next. Marks only move forward; a mark for a partition this
// member does not own (any more) is ignored, since its offsets are no longer
// this member's to commit.
func (g *GroupConsumer) MarkHandled(topic string, partition int32, next int64) {
	g.mu.Lock()
	ps := g.owned[topicPartition{topic, partition}]
	g.mu.Unlock()
	if ps == nil {
		return
	}
	for {
		cur := ps.consumed.Load()
		if next <= cur || ps.consumed.CompareAndSwap(cur, next) {
			return
		}
	}
}

// autoCommit commits every auto.commit.interval.ms until Close.
func (g *GroupConsumer) autoCommit() {
	defer g.wg.Done()
	t := time.NewTicker(orDuration(g.cfg.AutoCommitInterval, DefaultAutoCommitInterval))
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
			if err := g.CommitOffsets(g.ctx); err != nil && g.ctx.Err() == nil {
				g.logger.Warn("auto commit failed", "err", err)
			}
		}
	}
}

// initialStates builds the states of newly claimed partitions: committed
// offsets from the registry, the rest resolved now by auto.offset.reset.
// Resolving here (not leaving it to the fetcher) and committing the result
// at the next commit pins a new group's start: a later owner continues
// from the same place instead of resetting to a newer end.
func (g *GroupConsumer) initialStates(ctx context.Context, sess coord.Session, mine []topicPartition) (map[topicPartition]*partitionState, error) {
	states := make(map[topicPartition]*partitionState, len(mine))
	missing := map[string][]int32{}
	for _, tp := range mine {
		off, err := readOffset(ctx, sess, g.cfg.GroupID, tp.topic, tp.partition)
		if err != nil {
			return nil, err
		}
		ps := &partitionState{tp: tp}
		ps.consumed.Store(off)
		ps.committed.Store(off)
		states[tp] = ps
		if off < 0 {
			missing[tp.topic] = append(missing[tp.topic], tp.partition)
		}
	}
	if len(missing) > 0 {
		g.mu.Lock()
		adm := g.adm
		g.mu.Unlock()
		topics := slices.Sorted(maps.Keys(missing))
		list := adm.ListEndOffsets
		if g.cfg.resetSmallest() {
			list = adm.ListStartOffsets
		}
		listed, err := list(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("listing offsets for %s: %w", g.cfg.AutoOffsetReset, err)
		}
		for topic, ps := range missing {
			for _, p := range ps {
				lo, ok := listed.Lookup(topic, p)
				if !ok || lo.Err != nil || lo.Offset < 0 {
					return nil, fmt.Errorf("listing offset of %s-%d: %v", topic, p, lo.Err)
				}
				states[topicPartition{topic, p}].consumed.Store(lo.Offset)
			}
		}
	}
	g.assignStreams(states)
	return states, nil
}

// assignStreams spreads each topic's partitions round-robin over its
// streams, in partition order.
func (g *GroupConsumer) assignStreams(states map[topicPartition]*partitionState) {
	g.mu.Lock()
	streams := g.streams
	g.mu.Unlock()
	byTopic := map[string][]int32{}
	for tp := range states {
		byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
	}
	for topic, ps := range byTopic {
		slices.Sort(ps)
		ss := streams[topic]
		for i, p := range ps {
			states[topicPartition{topic, p}].stream = ss[i%len(ss)]
		}
	}
}
