package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// reconcileTopic publishes a new slot slice for t (topics are copied on
// write, so readers holding the old one stay consistent). A served
// partition whose storage settings changed is reopened with the new ones;
// the other settings apply in place.
func (b *Broker) reconcileTopic(t cluster.Topic) bool {
	ok := true
	tc := b.topicConfigOf(t)
	old := b.replication.Slots(t.Name)
	slots := make([]*partition.Replica, len(t.Partitions))
	if old != nil {
		copy(slots, old)
	}
	var release, removed []*partition.Replica
	if old != nil {
		for _, p := range old[min(len(slots), len(old)):] {
			if p != nil {
				release = append(release, p)
			}
		}
	}
	changed := old == nil || len(old) != len(slots)
	var roles []int // partitions whose role is applied once the slots are published
	var opened []partition.Key
	for i, cp := range t.Partitions {
		// Every replica opens its log: the leader serves it, the others
		// copy it from the leader (broker/partition).
		local := cp.Leader == b.cfg.BrokerID || slices.Contains(cp.Replicas, b.cfg.BrokerID)
		if local && slots[i] != nil && slots[i].Settings() != tc.Log {
			// Two logs must never share a directory: the old one is
			// closed before the new one opens. Requests meanwhile get
			// NOT_LEADER_OR_FOLLOWER and retry.
			b.logger.Info("topic storage settings changed; reopening partition", "topic", t.Name, "partition", i)
			b.replication.Release(slots[i], false)
			slots[i], changed = nil, true
		}
		switch {
		case local && slots[i] == nil:
			// A partition that failed to open is retried after a back-off
			// (openfail.go), not on every pass.
			if t.ID == "" {
				// Written without an id (Kafka's TopicCommand): the
				// controller assigns one, and its metadata change brings
				// the partition back here. Opening first could serve the
				// data of an earlier topic of this name.
				continue
			}
			key := partition.Key{Topic: t.Name, ID: t.ID, Partition: int32(i)}
			if !b.res.failures.Due(key) {
				ok = false
				continue
			}
			p, err := b.openLocal(t.Name, t.ID, int32(i), tc, t.Configs)
			if err != nil {
				b.partitionOpenFailed(key, err)
				ok = false
				continue
			}
			// The failure is forgotten once the partition is published
			// (below): until then Produce and Fetch still name its cause.
			opened = append(opened, key)
			slots[i], changed = p, true
			roles = append(roles, i)
			b.logger.Debug("serving partition", "topic", t.Name, "partition", i, "leader", cp.Leader)
		case !local && slots[i] != nil:
			// Moved away by a reassignment: its data goes, as Kafka's
			// StopReplica with deletion.
			removed = append(removed, slots[i])
			slots[i], changed = nil, true
			b.logger.Info("no longer a replica of partition; deleting its data", "topic", t.Name, "partition", i, "replicas", cp.Replicas)
		case local:
			slots[i].SetConfig(&tc)
			b.recordIdentity(slots[i], t.ID, t.Configs)
			roles = append(roles, i)
		}
	}
	// Roles before the slots are published: a partition visible to
	// requests already knows whether it leads (else a just-opened leader
	// would answer NOT_LEADER_OR_FOLLOWER for a moment).
	for _, i := range roles {
		b.replication.ApplyRole(slots[i], t.Partitions[i])
	}
	if changed {
		b.replication.Publish(t.Name, slots)
	}
	for _, k := range opened {
		b.res.failures.Succeeded(k)
	}
	for _, p := range release {
		b.replication.Release(p, false)
	}
	for _, p := range removed {
		b.replication.Release(p, true)
		b.mu.Lock()
		delete(b.onDisk[t.Name], p.Partition())
		b.mu.Unlock()
	}
	return ok
}

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
