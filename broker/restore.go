package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/tributary/tributary/broker/cluster"
)

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
		id, configs, err := restoredIdentity(dirs)
		if err != nil {
			return fmt.Errorf("broker: topic %s found on disk: %w", name, err)
		}
		err = first.member.CreateTopicWithAssignment(ctx, name, id, replicas, configs)
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

// restoredIdentity returns the topic id recorded in the first of a topic's
// partition directories (lowest partition) that has a valid one, and the
// overrides recorded in the first directory; a topic from before ids
// existed gets a new id, which its directories adopt. A topic.config.json
// written before the id left the config node may still hold the legacy id
// key: it is not a config, and is dropped.
func restoredIdentity(dirs []string) (string, map[string]string, error) {
	configs, err := readTopicConfigFile(dirs[0])
	if err != nil {
		return "", nil, err
	}
	delete(configs, cluster.LegacyTopicIDConfig)
	id := ""
	for _, dir := range dirs {
		if id, err = readPartitionTopicID(dir); err == nil && cluster.ValidTopicID(id) {
			break
		}
		id = ""
	}
	if id == "" {
		if id, err = cluster.NewTopicID(); err != nil {
			return "", nil, err
		}
	}
	return id, configs, nil
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
