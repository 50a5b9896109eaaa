package devcluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tributary/tributary/broker/cluster"
)

// leaderRestoreWait bounds how long Start waits for the replicas of a
// restarted cluster to be in sync again before it moves leadership back.
const leaderRestoreWait = 30 * time.Second

// restoreLeaders gives the partitions of a restarted cluster the leaders
// they had: once every partition whose replicas are all brokers of the
// cluster has them all in its ISR again (within leaderRestoreWait), a
// preferred-replica election moves each leadership that the stop left
// elsewhere back to the first replica, as `kafka-leader-election
// --election-type preferred` would (the brokers' own rebalance would wait
// for leader.imbalance.check.interval.seconds). A cluster that does not
// get there in time is left to that rebalance; nothing here fails Start.
func (c *Cluster) restoreLeaders(ctx context.Context) {
	first := c.brokers[0].Member()
	if first == nil {
		return
	}
	ours := func(ids []int32) bool {
		return !slices.ContainsFunc(ids, func(id int32) bool { return id < 1 || int(id) > len(c.brokers) })
	}
	wctx, cancel := context.WithTimeout(ctx, leaderRestoreWait)
	defer cancel()
	snap, err := first.AwaitMetadata(wctx, func(s cluster.Snapshot) bool {
		for _, t := range s.Topics {
			for _, p := range t.Partitions {
				if ours(p.Replicas) && (p.Leader < 0 || len(p.ISR) < len(p.Replicas)) {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		c.logger.Info("replicas still catching up after the restart; leaders move back at the next leader rebalance", "err", err)
		return
	}
	var parts []cluster.PartitionRef
	for _, name := range snap.TopicNames() {
		for _, p := range snap.Topics[name].Partitions {
			if ours(p.Replicas) && len(p.Replicas) > 1 && p.Leader != p.Replicas[0] {
				parts = append(parts, cluster.PartitionRef{Topic: name, Partition: p.ID})
			}
		}
	}
	if len(parts) == 0 {
		return
	}
	// Only the controller elects; it may change meanwhile.
	for wctx.Err() == nil {
		ctrl := first.Metadata().Controller
		if ctrl < 1 || int(ctrl) > len(c.brokers) || c.brokers[ctrl-1] == nil || c.brokers[ctrl-1].Member() == nil {
			break
		}
		results, err := c.brokers[ctrl-1].Member().ElectLeaders(wctx, cluster.ElectPreferred, parts)
		if errors.Is(err, cluster.ErrNotController) {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-wctx.Done():
			}
			continue
		}
		if err != nil {
			c.logger.Info("moving leadership back to the preferred replicas", "err", err)
			return
		}
		moved := 0
		for _, r := range results {
			if r.Err == nil {
				moved++
			}
		}
		c.logger.Info("leadership moved back to the preferred replicas", "partitions", moved, "asked", len(parts))
		return
	}
}
