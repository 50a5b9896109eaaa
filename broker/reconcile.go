package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
)

// reconcileRetry spaces retries of partitions that failed to open.
const reconcileRetry = 5 * time.Second

// runReconciler follows the cluster metadata until shutdown.
func (b *Broker) runReconciler() {
	defer b.wg.Done()
	var retry <-chan time.Time
	for {
		changed := b.member.Changes()
		if !b.reconcile(b.member.Metadata()) && retry == nil {
			retry = time.After(reconcileRetry)
		}
		select {
		case <-changed:
		case <-retry:
			retry = nil
		case mv := <-b.logDirMoves.swaps:
			// A replica moving between log.dirs has caught up: swapped
			// here, where partitions open and close.
			mv.swapped <- b.swapLogDir(mv)
		case <-b.shutdownCtx.Done():
			return
		}
	}
}

// reconcile opens the logs of the partitions snap says this broker leads,
// closes the others and deletes the local data of topics that left the
// metadata since the last pass. It reports false if a log failed to open.
// Only one goroutine runs it at a time (Start, then runReconciler).
func (b *Broker) reconcile(snap cluster.Snapshot) bool {
	// Dynamic broker configs first: they are the topics' defaults.
	b.resolveDynamicConfig(snap)
	ok := true
	for name := range b.seen {
		if _, still := snap.Topics[name]; !still {
			b.deleteLocal(name)
		}
	}
	b.seen = map[string]bool{}
	for _, name := range snap.TopicNames() {
		b.seen[name] = true
		if !b.reconcileTopic(snap.Topics[name]) {
			ok = false
		}
	}
	b.metrics.observeOffline(snap)
	b.mu.Lock()
	b.applied = snap
	close(b.served)
	b.served = make(chan struct{})
	b.mu.Unlock()
	return ok
}

// reconcileTopic brings the replicas of t in line with the metadata
// (partition.Manager.ReconcileTopic) under t's effective configuration.
func (b *Broker) reconcileTopic(t cluster.Topic) bool {
	return b.replication.ReconcileTopic(t, b.topicConfigOf(t), b.res.failures, reconcileLocal{b})
}

// reconcileLocal is the broker's side of the replicas' directories, as
// the reconciliation in broker/partition uses it.
type reconcileLocal struct{ b *Broker }

func (l reconcileLocal) Open(t cluster.Topic, p int32, tc config.Topic) (*partition.Replica, error) {
	return l.b.openLocal(t.Name, t.ID, p, tc, t.Configs)
}

func (l reconcileLocal) RecordIdentity(r *partition.Replica, t cluster.Topic) {
	l.b.recordIdentity(r, t.ID, t.Configs)
}

func (l reconcileLocal) Deleted(topic string, p int32) {
	l.b.mu.Lock()
	delete(l.b.onDisk[topic], p)
	l.b.mu.Unlock()
}

func (l reconcileLocal) OpenFailed(k partition.Key, err error) { l.b.partitionOpenFailed(k, err) }

// topicConfigOf returns the effective configuration of t. Overrides that
// do not validate (written to the coordinator by another tool) are ignored
// with a warning, once per distinct error.
func (b *Broker) topicConfigOf(t cluster.Topic) config.Topic {
	tc, err := config.ResolveTopic(b.topicDefaults(), t.Configs)
	if err == nil {
		delete(b.badConfigs, t.Name)
		return tc
	}
	if b.badConfigs == nil {
		b.badConfigs = map[string]string{}
	}
	if b.badConfigs[t.Name] != err.Error() {
		b.badConfigs[t.Name] = err.Error()
		b.logger.Warn("ignoring the topic's config overrides; broker defaults apply", "topic", t.Name, "err", err)
	}
	return tc
}

// openLocal opens a partition's log in the directory it already has, or in
// the log dir with the fewest partitions. A directory recording another
// topic id holds the data of an earlier topic of the same name, deleted
// while this broker was away: it is removed first, so that none of it is
// served.
func (b *Broker) openLocal(name, id string, p int32, tc config.Topic, overrides map[string]string) (*partition.Replica, error) {
	b.mu.RLock()
	dir, ok := b.onDisk[name][p]
	b.mu.RUnlock()
	if ok && id != "" {
		onDisk, err := readPartitionTopicID(dir)
		switch {
		case err != nil:
			b.logger.Warn("unreadable topic identity; keeping the partition's data", "dir", dir, "err", err)
		case onDisk != "" && onDisk != id:
			b.logger.Warn("deleting the data of an earlier topic of the same name", "topic", name,
				"partition", p, "dir", dir, "old_topic_id", onDisk, "topic_id", id)
			if err := os.RemoveAll(dir); err != nil {
				return nil, fmt.Errorf("broker: deleting stale partition %s-%d: %w", name, p, err)
			}
		}
	}
	if !ok {
		logDir := b.preferredLogDir(name, p)
		if logDir == "" {
			logDir = b.pickLogDir()
		}
		dir = filepath.Join(logDir, partitionDirName(name, p))
	}
	part, err := b.replication.Open(name, p, dir, tc)
	if err != nil {
		return nil, err
	}
	b.recordIdentity(part, id, overrides)
	b.mu.Lock()
	if b.onDisk[name] == nil {
		b.onDisk[name] = map[int32]string{}
	}
	b.onDisk[name][p] = dir
	b.mu.Unlock()
	return part, nil
}

// recordIdentity keeps the partition directory's identity files in line
// with the topic's id and overrides. A failure is logged, not fatal: the
// data is served either way, and a directory without an id is adopted by
// the next topic of its name.
func (b *Broker) recordIdentity(p *partition.Replica, id string, overrides map[string]string) {
	key := id + fmt.Sprint(overrides) // fmt sorts map keys
	if p.Identity() == key {
		return
	}
	if err := recordTopicIdentity(p.Dir(), id, overrides); err != nil {
		b.logger.Error("recording the topic's identity", "topic", p.Topic(), "partition", p.Partition(), "err", err)
		return
	}
	p.SetIdentity(key)
}

// deleteLocal removes a deleted topic's partitions, open or not.
func (b *Broker) deleteLocal(name string) {
	slots := b.replication.Remove(name)
	b.mu.Lock()
	dirs := b.onDisk[name]
	delete(b.onDisk, name)
	b.mu.Unlock()
	open := map[string]bool{}
	for _, p := range slots {
		if p != nil {
			open[p.Dir()] = true
			b.replication.Release(p, true)
		}
	}
	for _, dir := range dirs {
		if open[dir] {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			b.logger.Error("deleting partition directory", "dir", dir, "err", err)
		}
	}
	b.logger.Info("deleted topic", "topic", name)
}

// awaitServed waits until cond holds for the last reconciled snapshot.
func (b *Broker) awaitServed(ctx context.Context, cond func(cluster.Snapshot) bool) error {
	for {
		b.mu.RLock()
		ch, snap := b.served, b.applied
		b.mu.RUnlock()
		if cond(snap) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-b.shutdownCtx.Done():
			return ErrClosed
		}
	}
}

// topicReady holds once every partition of the topic has a leader and this
// broker serves those it leads.
func (b *Broker) topicReady(name string) func(cluster.Snapshot) bool {
	return func(snap cluster.Snapshot) bool {
		t, ok := snap.Topics[name]
		if !ok {
			return false
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return false
			}
			if p.Leader == b.cfg.BrokerID && b.partitions.Leader(name, p.ID) == nil {
				return false
			}
		}
		return true
	}
}

// topicGone holds once the topic left the metadata and its data is deleted.
func topicGone(name string) func(cluster.Snapshot) bool {
	return func(snap cluster.Snapshot) bool {
		_, ok := snap.Topics[name]
		return !ok
	}
}
