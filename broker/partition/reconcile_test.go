package partition

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
)

// fakeLocal opens offsetLogs, failing the partitions in fail.
type fakeLocal struct {
	root    string
	logs    map[int32]*offsetLog
	fail    map[int32]error
	failed  []Key
	deleted []int32
}

func (l *fakeLocal) Open(t cluster.Topic, p int32, tc config.Topic) (*Replica, error) {
	if err := l.fail[p]; err != nil {
		return nil, err
	}
	lg := &offsetLog{}
	l.logs[p] = lg
	return Open(func(string, config.LogSettings) (Log, error) { return lg, nil }, t.Name, p, filepath.Join(l.root, t.Name), tc, 0)
}

func (l *fakeLocal) RecordIdentity(*Replica, cluster.Topic) {}
func (l *fakeLocal) Deleted(_ string, p int32)              { l.deleted = append(l.deleted, p) }
func (l *fakeLocal) OpenFailed(k Key, err error)            { l.failed = append(l.failed, k) }

func TestReconcileTopic(t *testing.T) {
	m, _ := newTestManager(t)
	now := time.Unix(1000, 0)
	failures := NewOpenFailures(func() time.Time { return now })
	local := &fakeLocal{root: t.TempDir(), logs: map[int32]*offsetLog{},
		fail: map[int32]error{2: errors.New("no descriptors")}}
	// Broker 1 leads partition 0, follows 1 (no leader yet), leads 2
	// (which fails to open) and holds no replica of 3.
	topic := cluster.Topic{Name: "t", ID: "id", Partitions: []cluster.Partition{
		{ID: 0, Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{ID: 1, Leader: -1, Replicas: []int32{2, 1}},
		{ID: 2, Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}},
		{ID: 3, Leader: 2, LeaderEpoch: 1, Replicas: []int32{2}, ISR: []int32{2}},
	}}
	if m.ReconcileTopic(topic, config.Topic{}, failures, local) {
		t.Fatal("a failed open reported ok")
	}
	slots := m.Slots("t")
	if len(slots) != 4 || slots[0] == nil || slots[1] == nil || slots[2] != nil || slots[3] != nil {
		t.Fatalf("slots %v: want replicas of partitions 0 and 1", slots)
	}
	if m.Leader("t", 0) == nil || m.Leader("t", 1) != nil || m.Replica("t", 1) == nil {
		t.Fatal("partition 0 is not led or partition 1 not followed")
	}
	if len(local.failed) != 1 || local.failed[0] != (Key{Topic: "t", ID: "id", Partition: 2}) {
		t.Fatalf("failures reported %v, want partition 2", local.failed)
	}
	// Within the back-off the failed partition is not tried again.
	failures.Failed(Key{Topic: "t", ID: "id", Partition: 2}, errors.New("no descriptors"))
	delete(local.fail, 2)
	m.ReconcileTopic(topic, config.Topic{}, failures, local)
	if m.Replica("t", 2) != nil {
		t.Fatal("a partition in back-off was opened again")
	}
	now = now.Add(openRetryMax)
	if !m.ReconcileTopic(topic, config.Topic{}, failures, local) || m.Leader("t", 2) == nil {
		t.Fatal("partition 2 not served after its back-off")
	}
	// Reassigned away, partition 1's data goes; a storage setting change
	// reopens partition 0.
	topic.Partitions[1].Replicas = []int32{2, 3}
	follower, led := local.logs[1], local.logs[0]
	tc := config.Topic{}
	tc.Log.SegmentBytes = 1 << 20
	if !m.ReconcileTopic(topic, tc, failures, local) {
		t.Fatal("reconciliation failed")
	}
	if m.Replica("t", 1) != nil || !follower.closed.Load() || len(local.deleted) != 1 || local.deleted[0] != 1 {
		t.Fatalf("partition 1 still served or its data kept (deleted %v)", local.deleted)
	}
	if !led.closed.Load() || local.logs[0] == led || m.Leader("t", 0) == nil || m.Leader("t", 0).Settings() != tc.Log {
		t.Fatal("partition 0 not reopened with the new settings")
	}
}
