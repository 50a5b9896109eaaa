package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// errSessionLost: a rebalance attempt failed because the coordination
// session is gone (expired, or closed under it). Retrying on that session
// cannot succeed, so the rebalance stops at once, without counting against
// rebalance.max.retries: the member registers again on a new session and
// rebalances there.
var errSessionLost = errors.New("client: coordination session lost")

// rebalanceCommitTimeout bounds the commit a rebalance makes before it
// releases its partitions (at least rebalance.backoff.ms).
const rebalanceCommitTimeout = 5 * time.Second

// sessionGone reports whether err says the session can serve no more calls.
func sessionGone(err error) bool {
	return errors.Is(err, coord.ErrSessionExpired) || errors.Is(err, coord.ErrClosed)
}

// syncedRebalance is Kafka 0.8's syncedRebalance: up to
// rebalance.max.retries attempts of Algorithm 1, rebalance.backoff.ms
// apart, each starting from nothing owned. An attempt that fails because
// the session is gone ends it with an error wrapping errSessionLost.
func (g *GroupConsumer) syncedRebalance(ctx context.Context) error {
	var last error
	for attempt := 1; attempt <= g.cfg.maxRetries(); attempt++ {
		done, err := g.rebalanceOnce(ctx)
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if sessionGone(err) {
			return fmt.Errorf("%w: group %s consumer %s: %w", errSessionLost, g.cfg.GroupID, g.id, err)
		}
		last = err
		g.logger.Info("rebalance attempt did not settle; backing off",
			"attempt", attempt, "backoff", g.backoff(), "reason", err)
		if err := sleepCtx(ctx, g.backoff()); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: group %s consumer %s after %d attempts: %v",
		ErrRebalanceFailed, g.cfg.GroupID, g.id, g.cfg.maxRetries(), last)
}

// rebalanceOnce is one attempt of Algorithm 1. It reports done=false with
// the reason when a partition is still owned by another member (or a
// registry read failed): everything it claimed is released again.
func (g *GroupConsumer) rebalanceOnce(ctx context.Context) (bool, error) {
	g.mu.Lock()
	sess, sub := g.sess, g.sub
	g.mu.Unlock()

	members, err := g.readMembers(ctx, sess)
	if err != nil {
		return false, err
	}
	parts, metaCounts, err := g.readPartitions(ctx, sess, slices.Sorted(maps.Keys(sub)))
	if err != nil {
		return false, err
	}

	settled := settledKey(members, parts)
	g.mu.Lock()
	unchanged := g.settled == settled
	g.mu.Unlock()
	if unchanged {
		return true, nil // the registries are as the current ownership saw them
	}

	// Stop fetching, commit what the application handled, release what we
	// own: from here on this member owns nothing.
	// The commit outlives a Close that cuts this rebalance short (Close
	// cancels ctx while the run loop is here): what the application
	// handled is committed either way, or its next owner repeats it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(g.backoff(), rebalanceCommitTimeout))
	err = g.stopFetchingCtx(cctx, true)
	cancel()
	if err != nil {
		g.logger.Warn("commit before rebalance failed", "err", err)
	}
	g.releaseAll(ctx)

	var mine []topicPartition
	for _, topic := range slices.Sorted(maps.Keys(sub)) {
		var subscribers []string
		for id, topics := range members {
			if _, ok := topics[topic]; ok {
				subscribers = append(subscribers, id)
			}
		}
		for _, p := range RangeAssign(parts[topic], subscribers)[g.id] {
			mine = append(mine, topicPartition{topic, p})
		}
	}
	if err := g.claim(ctx, sess, mine); err != nil {
		g.releaseAll(ctx)
		return false, err
	}
	states, err := g.initialStates(ctx, sess, mine)
	if err != nil {
		g.releaseAll(ctx)
		return false, err
	}
	g.mu.Lock()
	g.owned = states
	g.metaCounts = metaCounts
	g.mu.Unlock()
	if err := g.startFetching(ctx, states); err != nil {
		g.stopFetching(false)
		g.releaseAll(ctx)
		return false, err
	}
	g.mu.Lock()
	g.settled = settled
	g.mu.Unlock()
	g.logger.Info("rebalanced", "owned", fmtOwned(mine), "members", len(members))
	return true, nil
}

// readMembers returns every registered member's subscribed topics.
func (g *GroupConsumer) readMembers(ctx context.Context, sess coord.Session) (map[string]map[string]int, error) {
	ids, _, err := sess.Children(ctx, idsPath(g.cfg.GroupID))
	if err != nil {
		return nil, fmt.Errorf("reading consumer registry: %w", err)
	}
	out := make(map[string]map[string]int, len(ids))
	for _, id := range ids {
		data, _, err := sess.Get(ctx, idPath(g.cfg.GroupID, id))
		if errors.Is(err, coord.ErrNoNode) {
			continue // left meanwhile; its watch fires another rebalance
		}
		if err != nil {
			return nil, fmt.Errorf("reading consumer registry: %w", err)
		}
		var reg consumerRegistration
		if err := json.Unmarshal(data, &reg); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadRegistry, idPath(g.cfg.GroupID, id), err)
		}
		out[id] = reg.Subscription
	}
	return out, nil
}

// readPartitions returns each topic's partitions: from /brokers/topics/<t>
// when the registry exists (cluster mode), otherwise from the broker's
// metadata (a single broker keeps no ZooKeeper topic registry). The second
// result holds the counts that came from metadata.
func (g *GroupConsumer) readPartitions(ctx context.Context, sess coord.Session, topics []string) (map[string][]int32, map[string]int, error) {
	out := map[string][]int32{}
	var fromMeta []string
	for _, t := range topics {
		ps, ok, err := readTopicPartitions(ctx, sess, t)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			out[t] = ps
		} else {
			fromMeta = append(fromMeta, t)
		}
	}
	metaCounts := map[string]int{}
	if len(fromMeta) > 0 {
		counts, err := g.metadataCounts(ctx, fromMeta)
		if err != nil {
			return nil, nil, err
		}
		for t, n := range counts {
			metaCounts[t] = n
			for p := range n {
				out[t] = append(out[t], int32(p))
			}
		}
	}
	return out, metaCounts, nil
}

// metadataCounts asks the broker how many partitions each topic has; an
// unknown topic has none.
func (g *GroupConsumer) metadataCounts(ctx context.Context, topics []string) (map[string]int, error) {
	g.mu.Lock()
	adm := g.adm
	g.mu.Unlock()
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("reading topic metadata: %w", err)
	}
	out := map[string]int{}
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			out[t] = 0
			continue
		}
		out[t] = len(d.Partitions)
	}
	return out, nil
}

// metadataChanged reports whether a topic whose partition count came from
// metadata has a different count now.
func (g *GroupConsumer) metadataChanged() bool {
	g.mu.Lock()
	last := maps.Clone(g.metaCounts)
	g.mu.Unlock()
	if len(last) == 0 {
		return false
	}
	now, err := g.metadataCounts(g.ctx, slices.Sorted(maps.Keys(last)))
	if err != nil {
		return false
	}
	return !maps.Equal(now, last)
}

// claim creates the owner nodes of mine. A node that exists belongs to a
// member that has not released it yet: give up this attempt.
func (g *GroupConsumer) claim(ctx context.Context, sess coord.Session, mine []topicPartition) error {
	for _, tp := range mine {
		path := ownerPath(g.cfg.GroupID, tp.topic, tp.partition)
		_, err := sess.CreateAll(ctx, path, []byte(g.id), coord.Ephemeral)
		if errors.Is(err, coord.ErrNodeExists) {
			// Ours already if an earlier create's reply was lost.
			data, st, gerr := sess.Get(ctx, path)
			if gerr == nil && st.EphemeralOwner == sess.ID() && string(data) == g.id {
				err = nil
			} else {
				return fmt.Errorf("partition %s-%d still owned by %q", tp.topic, tp.partition, data)
			}
		}
		if err != nil {
			return fmt.Errorf("claiming %s: %w", path, err)
		}
		g.mu.Lock()
		g.claimed = append(g.claimed, path)
		g.mu.Unlock()
	}
	return nil
}

// releaseAll deletes the owner nodes this member created. It checks each
// node is still this session's before deleting, so that it never removes
// another member's claim. A release that ctx cut short is no warning: ctx
// ends only with Close, whose closing of the session removes the nodes.
func (g *GroupConsumer) releaseAll(ctx context.Context) {
	g.commitMu.Lock()
	g.mu.Lock()
	claimed, sess := g.claimed, g.sess
	g.claimed, g.owned, g.settled = nil, nil, ""
	g.mu.Unlock()
	g.commitMu.Unlock()
	for _, path := range claimed {
		_, st, err := sess.Get(ctx, path)
		if err == nil && st.EphemeralOwner == sess.ID() {
			err = sess.Delete(ctx, path, st.Version)
		}
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			level := slog.LevelWarn
			if ctx.Err() != nil {
				level = slog.LevelDebug
			}
			g.logger.Log(context.Background(), level, "releasing partition failed", "path", path, "err", err)
		}
	}
}

func fmtOwned(tps []topicPartition) string {
	s := ""
	for i, tp := range tps {
		if i > 0 {
			s += ","
		}
		s += tp.topic + "-" + strconv.Itoa(int(tp.partition))
	}
	return "[" + s + "]"
}

// settledKey describes what a rebalance computes ownership from: every
// member with its subscription and every subscribed topic's partitions.
func settledKey(members map[string]map[string]int, parts map[string][]int32) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(members)) {
		fmt.Fprintf(&b, "m %s", id)
		for _, t := range slices.Sorted(maps.Keys(members[id])) {
			fmt.Fprintf(&b, " %s:%d", t, members[id][t])
		}
		b.WriteByte('\n')
	}
	for _, t := range slices.Sorted(maps.Keys(parts)) {
		fmt.Fprintf(&b, "p %s %v\n", t, parts[t])
	}
	return b.String()
}
