package partition

import (
	"context"
	"time"
)

// Partitions is what the broker's request handlers need of the local
// replicas: find them, wait for acks=all, and account for followers'
// fetches. Manager implements it.
type Partitions interface {
	// Leader returns the replica if this broker leads the partition, else
	// nil.
	Leader(topic string, p int32) *Replica
	// Replica returns the local replica of the partition, led or
	// followed, or nil.
	Replica(topic string, p int32) *Replica
	// All lists every local replica, led or followed.
	All() []*Replica
	// Topics returns the topic names and partition counts, as of the last
	// reconciliation with the cluster metadata.
	Topics() map[string]int32
	// WaitCommitted waits until every replica's high watermark passes
	// its target offset (acks=all); see Manager.WaitCommitted.
	WaitCommitted(ctx context.Context, deadline time.Time, targets map[*Replica]int64) map[*Replica]bool
	// FollowerFetched records a follower's fetch of a led replica; see
	// Manager.FollowerFetched.
	FollowerFetched(r *Replica, follower int32, offset, logStart int64) bool
	// LeaderThrottled reports whether this leader throttles what it sends
	// follower for r: the topic's leader.replication.throttled.replicas
	// names this broker's replica of r and the follower is out of sync.
	LeaderThrottled(r *Replica, follower int32) bool
}

var _ Partitions = (*Manager)(nil)

// Slots returns the topic's replicas, one slot per partition of the topic,
// nil where this broker holds no replica; nil for a topic not served. The
// slice is shared and must not be modified: Publish replaces it.
func (m *Manager) Slots(topic string) []*Replica {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topics[topic]
}

// Publish makes slots the topic's replicas (copy on write: requests
// holding the previous slice stay consistent). The reconciler's.
func (m *Manager) Publish(topic string, slots []*Replica) {
	m.mu.Lock()
	m.topics[topic] = slots
	m.mu.Unlock()
}

// Remove stops serving the topic and returns its replicas, for the caller
// to release.
func (m *Manager) Remove(topic string) []*Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	slots := m.topics[topic]
	delete(m.topics, topic)
	return slots
}

// RemoveAll stops serving every topic and returns their replicas, for the
// broker's Close to flush and close.
func (m *Manager) RemoveAll() map[string][]*Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.topics
	m.topics = map[string][]*Replica{}
	return all
}

// Leader implements Partitions.
func (m *Manager) Leader(topic string, p int32) *Replica {
	if r := m.Replica(topic, p); r != nil && r.Leading() {
		return r
	}
	return nil
}

// Replica implements Partitions.
func (m *Manager) Replica(topic string, p int32) *Replica {
	slots := m.Slots(topic)
	if p < 0 || int(p) >= len(slots) {
		return nil
	}
	return slots[p]
}

// All implements Partitions.
func (m *Manager) All() []*Replica {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Replica
	for _, slots := range m.topics {
		for _, r := range slots {
			if r != nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// Topics implements Partitions.
func (m *Manager) Topics() map[string]int32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]int32, len(m.topics))
	for n, slots := range m.topics {
		out[n] = int32(len(slots))
	}
	return out
}

// LeaderThrottled implements Partitions.
func (m *Manager) LeaderThrottled(r *Replica, follower int32) bool {
	tc := r.Config()
	if tc == nil || !tc.LeaderThrottled.Includes(r.index, m.d.BrokerID) {
		return false
	}
	return !r.InSync(follower)
}
