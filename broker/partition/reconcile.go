package partition

import (
	"slices"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
)

// Local is the broker's side of its replicas' directories, for
// ReconcileTopic: where a partition's data lives, what its directory
// records, and how a failed open is reported.
type Local interface {
	// Open opens the replica of partition p of t (with Manager.Open) in the
	// directory it has, or a new one, recording t's identity there.
	Open(t cluster.Topic, p int32, tc config.Topic) (*Replica, error)
	// RecordIdentity records t's id and overrides in r's directory if
	// they changed.
	RecordIdentity(r *Replica, t cluster.Topic)
	// Deleted forgets the directory of a replica whose data was deleted.
	Deleted(topic string, p int32)
	// OpenFailed reports a failed open (counted, logged, and recorded in
	// the OpenFailures for the retry's back-off).
	OpenFailed(k Key, err error)
}

// ReconcileTopic brings the replicas of t in line with the metadata, t's
// effective configuration being tc: it opens the replicas this broker
// holds (a partition that failed to open is retried after failures'
// back-off), reopens those whose storage settings changed (the others
// apply in place), gives each its role, publishes the new slots (copy on
// write, so readers holding the old ones stay consistent), and releases
// the rest, deleting the data of the partitions this broker is no longer
// a replica of. It reports false if a replica failed to open. The
// reconciler's: one goroutine.
func (m *Manager) ReconcileTopic(t cluster.Topic, tc config.Topic, failures *OpenFailures, local Local) bool {
	ok := true
	old := m.Slots(t.Name)
	slots := make([]*Replica, len(t.Partitions))
	if old != nil {
		copy(slots, old)
	}
	var release, removed []*Replica
	if old != nil {
		for _, p := range old[min(len(slots), len(old)):] {
			if p != nil {
				release = append(release, p)
			}
		}
	}
	changed := old == nil || len(old) != len(slots)
	var roles []int // partitions whose role is applied once the slots are published
	var opened []Key
	for i, cp := range t.Partitions {
		// Every replica opens its log: the leader serves it, the others
		// copy it from the leader.
		isLocal := cp.Leader == m.d.BrokerID || slices.Contains(cp.Replicas, m.d.BrokerID)
		if isLocal && slots[i] != nil && slots[i].Settings() != tc.Log {
			// Two logs must never share a directory: the old one is
			// closed before the new one opens. Requests meanwhile get
			// NOT_LEADER_OR_FOLLOWER and retry.
			m.d.Logger.Info("topic storage settings changed; reopening partition", "topic", t.Name, "partition", i)
			m.Release(slots[i], false)
			slots[i], changed = nil, true
		}
		switch {
		case isLocal && slots[i] == nil:
			// A partition that failed to open is retried after a back-off
			// (OpenFailures), not on every pass.
			if t.ID == "" {
				// Written without an id (Kafka's TopicCommand): the
				// controller assigns one, and its metadata change brings
				// the partition back here. Opening first could serve the
				// data of an earlier topic of this name.
				continue
			}
			key := Key{Topic: t.Name, ID: t.ID, Partition: int32(i)}
			if !failures.Due(key) {
				ok = false
				continue
			}
			p, err := local.Open(t, int32(i), tc)
			if err != nil {
				local.OpenFailed(key, err)
				ok = false
				continue
			}
			// The failure is forgotten once the partition is published
			// (below): until then Produce and Fetch still name its cause.
			opened = append(opened, key)
			slots[i], changed = p, true
			roles = append(roles, i)
			m.d.Logger.Debug("serving partition", "topic", t.Name, "partition", i, "leader", cp.Leader)
		case !isLocal && slots[i] != nil:
			// Moved away by a reassignment: its data goes, as Kafka's
			// StopReplica with deletion.
			removed = append(removed, slots[i])
			slots[i], changed = nil, true
			m.d.Logger.Info("no longer a replica of partition; deleting its data", "topic", t.Name, "partition", i, "replicas", cp.Replicas)
		case isLocal:
			slots[i].SetConfig(&tc)
			local.RecordIdentity(slots[i], t)
			roles = append(roles, i)
		}
	}
	// Roles before the slots are published: a partition visible to
	// requests already knows whether it leads (else a just-opened leader
	// would answer NOT_LEADER_OR_FOLLOWER for a moment).
	for _, i := range roles {
		m.ApplyRole(slots[i], t.Partitions[i])
	}
	if changed {
		m.Publish(t.Name, slots)
	}
	for _, k := range opened {
		failures.Succeeded(k)
	}
	for _, p := range release {
		m.Release(p, false)
	}
	for _, p := range removed {
		m.Release(p, true)
		local.Deleted(t.Name, p.Partition())
	}
	return ok
}
