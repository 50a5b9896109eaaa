package cluster

import (
	"slices"
	"strconv"
	"testing"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestReassignment: a reassignment is recorded as Kafka's topic node
// records it (replicas target+removed, adding, removing), cancelled back
// to the original replicas, and completed by the controller once the
// added replica joins the ISR: the leadership leaves the removed leader,
// the ISR and the replicas become the target's.
func TestReassignment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		byID := map[int32]*Member{1: ms[0], 2: ms[1], 3: ms[2]}
		m := ms[2]
		ctx := ctxFor(t)
		must(t, m.CreateTopic(ctx, "r", 1, 2, nil))
		snap := await(t, m, "r in sync", func(s Snapshot) bool {
			p, ok := s.Partition("r", 0)
			return ok && p.Leader >= 0 && len(p.ISR) == 2
		})
		orig := snap.Topics["r"].Partitions[0]
		leader, follower := orig.Replicas[0], orig.Replicas[1]
		var z int32
		for id := int32(1); id <= 3; id++ {
			if !slices.Contains(orig.Replicas, id) {
				z = id
			}
		}
		target := []int32{z, follower}
		start := func() {
			res, err := m.AlterReassignments(ctx, "r", []ReassignmentRequest{{Partition: 0, Target: target}})
			must(t, err)
			must(t, res[0])
			// The writer's own metadata shows the write at once (what
			// ListPartitionReassignments answers from).
			if p, _ := m.Metadata().Partition("r", 0); !slices.Equal(p.AddingReplicas, []int32{z}) {
				t.Fatalf("right after AlterReassignments the writer's metadata shows %+v", p)
			}
			for _, mm := range ms {
				await(t, mm, "reassignment recorded", func(s Snapshot) bool {
					p, _ := s.Partition("r", 0)
					return slices.Equal(p.Replicas, []int32{z, follower, leader}) &&
						slices.Equal(p.AddingReplicas, []int32{z}) && slices.Equal(p.RemovingReplicas, []int32{leader})
				})
			}
		}
		start()
		// Cancelled: the original replicas (in the order Kafka's
		// originReplicas gives, replicas minus adding), nothing in progress.
		res, err := m.AlterReassignments(ctx, "r", []ReassignmentRequest{{Partition: 0}})
		must(t, err)
		must(t, res[0])
		if p, _ := m.Metadata().Partition("r", 0); p.Reassigning() {
			t.Fatalf("right after the cancellation the writer's metadata shows %+v", p)
		}
		await(t, m, "reassignment cancelled", func(s Snapshot) bool {
			p, _ := s.Partition("r", 0)
			return slices.Equal(p.Replicas, []int32{follower, leader}) && !p.Reassigning()
		})
		res, err = m.AlterReassignments(ctx, "r", []ReassignmentRequest{{Partition: 0}})
		must(t, err)
		wantErr(t, res[0], ErrNoReassignmentInProgress, "cancelling twice")
		res, err = m.AlterReassignments(ctx, "r", []ReassignmentRequest{{Partition: 0, Target: []int32{z, 7}}, {Partition: 3, Target: target}})
		must(t, err)
		wantErr(t, res[0], ErrInvalidReplicaAssignment, "a broker that is not live")
		wantErr(t, res[3], ErrUnknownTopic, "an unknown partition")

		start()
		// The added replica caught up: the leader adds it to the ISR.
		cur, _ := byID[leader].Metadata().Partition("r", 0)
		_, err = byID[leader].AlterISR(ctx, "r", 0, cur.LeaderEpoch, append(slices.Clone(cur.ISR), z))
		must(t, err)
		done := await(t, m, "reassignment completed", func(s Snapshot) bool {
			p, _ := s.Partition("r", 0)
			// The topic node and the state are written in one multi-op but
			// watched apart: wait for both.
			return !p.Reassigning() && slices.Equal(p.Replicas, target) && p.LeaderEpoch > cur.LeaderEpoch
		})
		p, _ := done.Partition("r", 0)
		if p.Leader != z || slices.Contains(p.ISR, leader) || len(p.ISR) != 2 || p.LeaderEpoch <= cur.LeaderEpoch {
			t.Fatalf("after completion: leader %d ISR %v epoch %d (was %d); want leader %d, ISR of %v",
				p.Leader, p.ISR, p.LeaderEpoch, cur.LeaderEpoch, z, target)
		}
	})
}

// TestZKReassignment: /admin/reassign_partitions, as Kafka 2.8's tools
// write it, is carried out and deleted once done.
func TestZKReassignment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3)
		m := ms[0]
		ctx := ctxFor(t)
		must(t, m.CreateTopic(ctx, "z", 1, 1, nil))
		snap := await(t, m, "z led", func(s Snapshot) bool { p, ok := s.Partition("z", 0); return ok && p.Leader >= 0 })
		from := snap.Topics["z"].Partitions[0].Replicas[0]
		to := from%3 + 1
		_, err := e.admin.Create(ctx, reassignPartitionsPath,
			[]byte(`{"version":1,"partitions":[{"topic":"z","partition":0,"replicas":[`+strconv.Itoa(int(to))+`]},`+
				`{"topic":"nope","partition":0,"replicas":[1]}]}`), coord.Persistent)
		must(t, err)
		await(t, m, "reassignment of z-0 started", func(s Snapshot) bool {
			p, _ := s.Partition("z", 0)
			return p.Reassigning()
		})
		// The new replica "catches up": its leader adds it to the ISR.
		byID := map[int32]*Member{1: ms[0], 2: ms[1], 3: ms[2]}
		leader := byID[from]
		await(t, leader, "leader sees the reassignment", func(s Snapshot) bool { p, _ := s.Partition("z", 0); return p.Reassigning() })
		cur, _ := leader.Metadata().Partition("z", 0)
		_, err = leader.AlterISR(ctx, "z", 0, cur.LeaderEpoch, []int32{from, to})
		must(t, err)
		await(t, m, "z-0 moved", func(s Snapshot) bool {
			p, _ := s.Partition("z", 0)
			return !p.Reassigning() && slices.Equal(p.Replicas, []int32{to}) && p.Leader == to
		})
		testenv.WaitFor(t, waitTimeout, reassignPartitionsPath+" deleted", func() (bool, string) { return !e.exists(t, reassignPartitionsPath), "" })
	})
}
