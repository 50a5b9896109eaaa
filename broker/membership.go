package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
)

const (
	// joinSlack is added to the connection timeout to bound the whole
	// join: registration and the first metadata load after the session.
	joinSlack = 30 * time.Second
	// reconcileRetry spaces retries of partitions that failed to open.
	reconcileRetry = 5 * time.Second
	// adminWait bounds CreateTopic and DeleteTopic waits when the request
	// gives no timeout of its own (auto-creation, restore).
	adminWait = 30 * time.Second
)

// WithCoordinator makes the broker join the cluster through connect
// instead of zookeeper.connect or its own in-process coordinator: several
// brokers of one process (tributary dev, tests) share one memcoord server
// this way. Topics found on disk are not registered by the broker then;
// see RestoreTopics, and SeedProducerIDs for producer ids.
func WithCoordinator(connect cluster.SessionFactory) Option {
	return func(b *Broker) { b.connect = connect }
}

// chooseCoordinator sets b.connect from the configuration unless an option
// set it: ZooKeeper when zookeeper.connect is given, else a memcoord server
// private to this broker (the single-node mode).
func (b *Broker) chooseCoordinator() {
	switch {
	case b.connect != nil:
	case b.cfg.ZooKeeperConnect != "":
		zc := zkcoord.Config{
			SessionTimeout:    b.cfg.ZooKeeperSessionTimeout,
			ConnectionTimeout: b.cfg.ZooKeeperConnectionTimeout,
			Logger:            b.logger,
		}
		connect := b.cfg.ZooKeeperConnect
		b.connect = func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, connect, zc)
		}
	default:
		srv := memcoord.NewServer()
		b.standalone = true
		b.connect = func(context.Context) (coord.Session, error) {
			return srv.Connect(memcoord.Config{Logger: b.logger}), nil
		}
	}
}

// join registers the broker at its advertised address and brings the
// served partitions in line with the cluster metadata. Standalone brokers
// first register the topics found on disk, which their fresh in-process
// coordinator does not know.
func (b *Broker) join(ctx context.Context) error {
	// A restart right after a crash may wait out its own stale
	// registration: up to a session timeout plus cluster's slack.
	wait := b.cfg.ZooKeeperConnectionTimeout + b.cfg.ZooKeeperSessionTimeout + cluster.StaleRegistrationSlack + joinSlack
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := cluster.Join(ctx, b.connect, cluster.Config{
		BrokerID:       b.cfg.BrokerID,
		Host:           b.advHost,
		Port:           b.advPort,
		Logger:         b.logger,
		SessionTimeout: b.cfg.ZooKeeperSessionTimeout,
	})
	if err != nil {
		return fmt.Errorf("broker: joining the cluster: %w", err)
	}
	b.mu.Lock()
	b.member = m
	b.mu.Unlock()
	if !b.standalone {
		b.pids.remote = &idBlocks{connect: b.connect, brokerID: b.cfg.BrokerID}
	}
	if b.standalone {
		// Not yet serving: leaders are awaited, join's reconcile opens them.
		if err := restoreTopics(ctx, false, b); err != nil {
			return err
		}
	}
	b.reconcile(m.Metadata())
	return nil
}

// RestoreTopics registers, through the first broker, the topics found in
// the log dirs of brokers that the coordinator does not know, so that a
// single process running on in-process coordination keeps its topics across
// restarts. The brokers must be started (joined) and should be every broker
// of the cluster. Each partition is assigned to the broker whose log dirs
// hold it, whatever the round-robin would pick, with the config overrides
// and topic id recorded in its directory; a partition found on no broker is
// assigned round-robin and starts empty (with a warning). It returns once
// their partitions are led and served.
func RestoreTopics(ctx context.Context, brokers ...*Broker) error {
	return restoreTopics(ctx, true, brokers...)
}

// diskCopy is one broker's directory of a partition found on disk.
type diskCopy struct {
	broker int32
	dir    string
}

func restoreTopics(ctx context.Context, waitServed bool, brokers ...*Broker) error {
	if len(brokers) == 0 {
		return nil
	}
	first := brokers[0]
	if first.member == nil {
		return ErrNotStarted
	}
	ids := make([]int32, len(brokers))
	found := map[string]map[int32][]diskCopy{} // topic -> partition -> copies
	for i, b := range brokers {
		ids[i] = b.cfg.BrokerID
		for name, parts := range b.diskPartitions() {
			if found[name] == nil {
				found[name] = map[int32][]diskCopy{}
			}
			for p, dir := range parts {
				found[name][p] = append(found[name][p], diskCopy{broker: b.cfg.BrokerID, dir: dir})
			}
		}
	}
	slices.Sort(ids)
	snap := first.member.Metadata()
	var restored []string
	for _, name := range slices.Sorted(maps.Keys(found)) {
		if _, ok := snap.Topics[name]; ok {
			continue
		}
		replicas, dirs := placeFound(first, name, found[name], ids)
		configs, err := restoredConfigs(dirs)
		if err != nil {
			return fmt.Errorf("broker: topic %s found on disk: %w", name, err)
		}
		err = first.member.CreateTopicWithAssignment(ctx, name, replicas, configs)
		if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
			return fmt.Errorf("broker: registering topic %s found on disk: %w", name, err)
		}
		first.logger.Info("loaded topic", "topic", name, "partitions", len(replicas))
		restored = append(restored, name)
	}
	led := func(snap cluster.Snapshot) bool {
		for _, name := range restored {
			t, ok := snap.Topics[name]
			if !ok {
				return false
			}
			for _, p := range t.Partitions {
				if p.Leader < 0 {
					return false
				}
			}
		}
		return true
	}
	if _, err := first.member.AwaitMetadata(ctx, led); err != nil {
		return fmt.Errorf("broker: electing leaders of topics found on disk: %w", err)
	}
	if !waitServed {
		return nil
	}
	for _, name := range restored {
		for _, b := range brokers {
			if err := b.awaitServed(ctx, b.topicReady(name)); err != nil {
				return fmt.Errorf("broker: serving topic %s found on disk: %w", name, err)
			}
		}
	}
	return nil
}

// placeFound assigns each partition of a topic found on disk to the broker
// holding its directory, and returns the chosen directories in partition
// order. Partitions up to the highest one found that are on no broker go
// round-robin over ids (sorted), as CreateTopic would place them. A
// partition held by several brokers (a directory left behind by hand) goes
// to the one with the most data; the other copies are not served.
func placeFound(first *Broker, name string, parts map[int32][]diskCopy, ids []int32) (map[int32][]int32, []string) {
	n := slices.Max(slices.Collect(maps.Keys(parts))) + 1
	replicas := make(map[int32][]int32, n)
	var dirs []string
	var missing []int32
	for p := range n {
		copies := parts[p]
		if len(copies) == 0 {
			missing = append(missing, p)
			replicas[p] = []int32{ids[int(p)%len(ids)]}
			continue
		}
		best := copies[0]
		if len(copies) > 1 {
			slices.SortFunc(copies, func(x, y diskCopy) int { return int(x.broker) - int(y.broker) })
			best = slices.MaxFunc(copies, func(x, y diskCopy) int { return cmp.Compare(dirBytes(x.dir), dirBytes(y.dir)) })
			first.logger.Warn("partition found on several brokers; serving the largest copy", "topic", name,
				"partition", p, "copies", copies, "chosen", best.broker)
		}
		replicas[p] = []int32{best.broker}
		dirs = append(dirs, best.dir)
	}
	if len(missing) > 0 {
		first.logger.Warn("partition directories missing on every broker; they are created empty", "topic", name,
			"partitions", n, "missing", missing)
	}
	return replicas, dirs
}

// dirBytes is the total size of the files in dir (0 if unreadable).
func dirBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total
}

// restoredConfigs returns the overrides and topic id recorded in the first
// of a topic's partition directories (lowest partition) that has an id; a
// topic from before ids existed gets a new one, which its directories
// adopt.
func restoredConfigs(dirs []string) (map[string]string, error) {
	configs, err := readTopicConfigFile(dirs[0])
	if err != nil {
		return nil, err
	}
	if configs == nil {
		configs = map[string]string{}
	}
	id := ""
	for _, dir := range dirs {
		if id, err = readPartitionTopicID(dir); err == nil && id != "" {
			break
		}
	}
	if id == "" {
		if id, err = newTopicID(); err != nil {
			return nil, err
		}
	}
	configs[topicIDConfig] = id
	return configs, nil
}

// diskPartitions returns a copy of the partition directories on disk.
func (b *Broker) diskPartitions() map[string]map[int32]string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make(map[string]map[int32]string, len(b.onDisk))
	for t, parts := range b.onDisk {
		out[t] = maps.Clone(parts)
	}
	return out
}

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
	old := b.lookup(t.Name)
	slots := make([]*partition, len(t.Partitions))
	if old != nil {
		copy(slots, old.partitions)
	}
	var release []*partition
	if old != nil {
		for _, p := range old.partitions[min(len(slots), len(old.partitions)):] {
			if p != nil {
				release = append(release, p)
			}
		}
	}
	changed := old == nil || len(old.partitions) != len(slots)
	for i, cp := range t.Partitions {
		lead := cp.Leader == b.cfg.BrokerID
		if lead && slots[i] != nil && slots[i].settings != tc.log {
			// Two logs must never share a directory: the old one is
			// closed before the new one opens. Requests meanwhile get
			// NOT_LEADER_OR_FOLLOWER and retry.
			b.logger.Info("topic storage settings changed; reopening partition", "topic", t.Name, "partition", i)
			b.releasePartition(slots[i], false)
			slots[i], changed = nil, true
		}
		switch {
		case lead && slots[i] == nil:
			p, err := b.openLocal(t.Name, int32(i), tc, t.Configs)
			if err != nil {
				b.logger.Error("opening a led partition failed", "topic", t.Name, "partition", i, "err", err)
				ok = false
				continue
			}
			slots[i], changed = p, true
			b.logger.Debug("serving partition", "topic", t.Name, "partition", i)
		case !lead && slots[i] != nil:
			release = append(release, slots[i])
			slots[i], changed = nil, true
			b.logger.Debug("no longer leading partition", "topic", t.Name, "partition", i, "leader", cp.Leader)
		case lead:
			slots[i].conf.Store(&tc)
			b.recordIdentity(slots[i], t.Configs)
		}
	}
	if changed {
		b.mu.Lock()
		b.topics[t.Name] = &topic{name: t.Name, partitions: slots}
		b.mu.Unlock()
	}
	for _, p := range release {
		b.releasePartition(p, false)
	}
	return ok
}

// topicConfigOf returns the effective configuration of t. Overrides that
// do not validate (written to the coordinator by another tool) are ignored
// with a warning, once per distinct error.
func (b *Broker) topicConfigOf(t cluster.Topic) topicConfig {
	tc, err := resolveTopicConfig(b.cfg.topicDefaults(), t.Configs, true)
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
func (b *Broker) openLocal(name string, p int32, tc topicConfig, overrides map[string]string) (*partition, error) {
	id := overrides[topicIDConfig]
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
		dir = filepath.Join(b.pickLogDir(), partitionDirName(name, p))
	}
	part, err := b.openPartition(name, p, dir, tc)
	if err != nil {
		return nil, err
	}
	b.recordIdentity(part, overrides)
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
func (b *Broker) recordIdentity(p *partition, overrides map[string]string) {
	key := fmt.Sprint(overrides) // fmt sorts map keys
	if p.identity == key {
		return
	}
	if err := recordTopicIdentity(p.dir, overrides[topicIDConfig], overrides); err != nil {
		b.logger.Error("recording the topic's identity", "topic", p.topic, "partition", p.index, "err", err)
		return
	}
	p.identity = key
}

// releasePartition stops serving p: waiting fetches end, then the log is
// closed, or deleted with its data.
func (b *Broker) releasePartition(p *partition, del bool) {
	p.wake()
	b.metrics.forget(p)
	var err error
	if del {
		err = p.log.Delete()
	} else {
		if err = p.log.Flush(); err == nil {
			err = p.log.Close()
		}
	}
	if err != nil {
		b.logger.Error("releasing partition", "topic", p.topic, "partition", p.index, "delete", del, "err", err)
	}
}

// deleteLocal removes a deleted topic's partitions, open or not.
func (b *Broker) deleteLocal(name string) {
	b.mu.Lock()
	t := b.topics[name]
	delete(b.topics, name)
	dirs := b.onDisk[name]
	delete(b.onDisk, name)
	b.mu.Unlock()
	open := map[string]bool{}
	if t != nil {
		for _, p := range t.partitions {
			if p != nil {
				open[p.dir] = true
				b.releasePartition(p, true)
			}
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
			if p.Leader == b.cfg.BrokerID && b.partitionOf(name, p.ID) == nil {
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

// createTopic registers a topic of n partitions (n <= 0: num.partitions)
// with the config overrides, which must have been validated, and a fresh
// topic id, then waits until it is served. With existingOK an existing
// topic is not an error.
func (b *Broker) createTopic(ctx context.Context, name string, n int32, overrides map[string]string, existingOK bool) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	if n <= 0 {
		n = b.cfg.NumPartitions
	}
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	configs := maps.Clone(overrides)
	if configs == nil {
		configs = map[string]string{}
	}
	if configs[topicIDConfig], err = newTopicID(); err != nil {
		return err
	}
	err = m.CreateTopic(ctx, name, n, 1, configs)
	switch {
	case errors.Is(err, cluster.ErrTopicExists) && existingOK:
	case errors.Is(err, cluster.ErrTopicExists):
		return fmt.Errorf("%w: %w", ErrTopicExists, err)
	case errors.Is(err, cluster.ErrInvalidTopic):
		return fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	case err != nil:
		return err
	}
	return b.awaitServed(ctx, b.topicReady(name))
}

// CreateTopic creates a topic with n partitions (n <= 0: num.partitions)
// and returns once every partition has a leader and this broker serves the
// ones it leads.
func (b *Broker) CreateTopic(ctx context.Context, name string, n int32) error {
	return b.createTopic(ctx, name, n, nil, false)
}

// CreateTopicWithConfigs is CreateTopic with topic config overrides
// (Kafka's names: retention.ms, segment.bytes, max.message.bytes, ...).
// Unknown keys and invalid values fail with an error wrapping
// ErrInvalidTopicConfig.
func (b *Broker) CreateTopicWithConfigs(ctx context.Context, name string, n int32, configs map[string]string) error {
	if _, err := resolveTopicConfig(b.cfg.topicDefaults(), configs, false); err != nil {
		return err
	}
	return b.createTopic(ctx, name, n, configs, false)
}

// DeleteTopic deletes a topic and returns once it has left this broker's
// metadata and this broker's share of its data is deleted.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	m, err := b.clusterMember()
	if err != nil {
		return err
	}
	if err := m.DeleteTopic(ctx, name); err != nil {
		if errors.Is(err, cluster.ErrUnknownTopic) {
			return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
		}
		return err
	}
	return b.awaitServed(ctx, topicGone(name))
}

func (b *Broker) clusterMember() (*cluster.Member, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.member == nil {
		return nil, ErrNotStarted
	}
	return b.member, nil
}

// Member returns the broker's cluster membership, nil before Start.
func (b *Broker) Member() *cluster.Member {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.member
}

// metadata returns the latest cluster metadata.
func (b *Broker) metadata() cluster.Snapshot {
	if m := b.Member(); m != nil {
		return m.Metadata()
	}
	return cluster.Snapshot{Controller: -1}
}

// unservedCode is the error for a partition this broker has no log open
// for: the client must refresh its metadata when the partition exists.
func unservedCode(snap cluster.Snapshot, topic string, p int32) int16 {
	if _, ok := snap.Partition(topic, p); ok {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// adminErrorCodes is the one table from topic administration errors (the
// cluster's and the broker's) to Kafka error codes; the first entry that
// errors.Is matches wins.
var adminErrorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{ErrTopicExists, kerr.TopicAlreadyExists},
	{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
	{ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{cluster.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{ErrInvalidTopic, kerr.InvalidTopicException},
	{cluster.ErrInvalidTopic, kerr.InvalidTopicException},
	{cluster.ErrInvalidPartitions, kerr.InvalidPartitions},
	{cluster.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{cluster.ErrInvalidTopicConfig, kerr.InvalidConfig},
	{ErrInvalidTopicConfig, kerr.InvalidConfig},
	// The request may still take effect: a retriable code makes the client
	// try again and find out.
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{coord.ErrUnavailable, kerr.RequestTimedOut},
	{ErrClosed, kerr.NotController},
	{cluster.ErrClosed, kerr.NotController},
}

// adminErrorCode maps an error of createTopic or DeleteTopic.
func adminErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range adminErrorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}
