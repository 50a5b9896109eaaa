package cluster

import (
	"context"
	"errors"
	"slices"

	"github.com/tributary/tributary/internal/coord"
)

// reassignPartitionsPath is where Kafka's tools before 2.4 (and 2.8's with
// --zookeeper) request reassignments:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,3]}]}
//
// (frozen: Kafka's). The controller starts each entry as
// AlterReassignments would and removes it once the partition has its
// target replicas; the node goes when empty, which is what the tools'
// --verify watches for.
const reassignPartitionsPath = "/admin/reassign_partitions"

type zkReassignRecord struct {
	Version    int               `json:"version"`
	Partitions []zkReassignEntry `json:"partitions"`
}

type zkReassignEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// reconcileZKReassignments carries out /admin/reassign_partitions: entries
// not started (or with another target than the one in progress) are
// started, completed ones and ones that cannot be (unknown partition,
// invalid target) are dropped; the node is rewritten, or deleted once
// empty, by compare-and-set (a conflict waits for the next pass).
func (c *controller) reconcileZKReassignments(ctx context.Context, snap Snapshot) error {
	if snap.zkReassign == nil {
		return nil
	}
	var rec zkReassignRecord
	if err := strictJSON(snap.zkReassign.data, &rec); err != nil {
		c.m.log.Warn("cluster: ignoring malformed "+reassignPartitionsPath, "err", err)
		return nil
	}
	var keep []zkReassignEntry
	for _, e := range rec.Partitions {
		p, ok := snap.Partition(e.Topic, e.Partition)
		switch {
		case !ok:
			c.m.log.Warn("cluster: dropping a reassignment of an unknown partition", "topic", e.Topic, "partition", e.Partition)
			continue
		case !p.Reassigning() && slices.Equal(p.Replicas, e.Replicas):
			continue // done
		case p.Reassigning() && slices.Equal(p.reassignmentTarget(), e.Replicas):
			keep = append(keep, e) // in progress
			continue
		}
		res, err := c.m.AlterReassignments(ctx, e.Topic, []ReassignmentRequest{{Partition: e.Partition, Target: e.Replicas}})
		if err == nil {
			err = res[e.Partition]
		}
		if err != nil {
			if errors.Is(err, ErrInvalidReplicaAssignment) || errors.Is(err, ErrUnknownTopic) {
				c.m.log.Warn("cluster: dropping an invalid reassignment", "topic", e.Topic, "partition", e.Partition, "err", err)
				continue
			}
			return err
		}
		keep = append(keep, e)
	}
	if len(keep) == len(rec.Partitions) {
		return nil
	}
	var err error
	if len(keep) == 0 {
		err = c.s.Delete(ctx, reassignPartitionsPath, snap.zkReassign.version)
	} else {
		rec.Partitions = keep
		_, err = c.s.Set(ctx, reassignPartitionsPath, mustJSON(rec), snap.zkReassign.version)
	}
	if err != nil && !errors.Is(err, coord.ErrBadVersion) && !errors.Is(err, coord.ErrNoNode) {
		return err
	}
	return nil
}
