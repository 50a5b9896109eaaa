package cluster

import (
	"reflect"
	"slices"
	"testing"
)

// TestAddPartitions: new partitions are assigned as the tail of a new
// topic's rack-aware assignment of the new count, validate-only writes
// nothing, bad assignments and counts are refused, and the controller
// elects the new partitions' leaders.
func TestAddPartitions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		ms := e.joinAll(t, 1, 2, 3, 4) // racks rack-1, rack-0, rack-1, rack-0
		m := ms[1]
		ctx := ctxFor(t)
		must(t, m.CreateTopic(ctx, "g", 2, 2, nil))
		await(t, m, "leaders of g", func(s Snapshot) bool { return len(leaders(s, "g")) == 2 && !slices.Contains(leaders(s, "g"), -1) })

		racks := map[int32]string{1: "rack-1", 2: "rack-0", 3: "rack-1", 4: "rack-0"}
		full, err := assignReplicasByRack([]int32{1, 2, 3, 4}, racks, 6, 2)
		must(t, err)
		added, err := m.AddPartitions(ctx, "g", 6, nil, true)
		must(t, err)
		if !reflect.DeepEqual(added, full[2:]) {
			t.Fatalf("validate-only assignment %v, want the tail of %v", added, full)
		}
		for _, rs := range added {
			if racks[rs[0]] == racks[rs[1]] {
				t.Fatalf("replicas %v share a rack", rs)
			}
		}
		if n := len(m.Metadata().Topics["g"].Partitions); n != 2 {
			t.Fatalf("validate-only changed the topic: %d partitions", n)
		}
		_, err = m.AddPartitions(ctx, "g", 2, nil, false)
		wantErr(t, err, ErrInvalidPartitions, "same count")
		_, err = m.AddPartitions(ctx, "g", 3, [][]int32{{1, 9}}, false)
		wantErr(t, err, ErrInvalidReplicaAssignment, "unknown broker")
		_, err = m.AddPartitions(ctx, "g", 3, [][]int32{{1}}, false)
		wantErr(t, err, ErrInvalidReplicaAssignment, "replication factor 1 on an RF 2 topic")
		_, err = m.AddPartitions(ctx, "nope", 3, nil, false)
		wantErr(t, err, ErrUnknownTopic, "unknown topic")

		got, err := m.AddPartitions(ctx, "g", 6, nil, false)
		must(t, err)
		if !reflect.DeepEqual(got, full[2:]) {
			t.Fatalf("assignment %v, want %v", got, full[2:])
		}
		snap := await(t, ms[0], "6 led partitions of g", func(s Snapshot) bool {
			ls := leaders(s, "g")
			return len(ls) == 6 && !slices.Contains(ls, -1)
		})
		for p, part := range snap.Topics["g"].Partitions {
			if want := full[p]; p >= 2 && !reflect.DeepEqual(part.Replicas, want) {
				t.Fatalf("partition %d: replicas %v, want %v", p, part.Replicas, want)
			}
			if part.Leader != part.Replicas[0] {
				t.Fatalf("partition %d: leader %d, want the preferred %d", p, part.Leader, part.Replicas[0])
			}
		}
		// An explicit assignment for the seventh.
		_, err = m.AddPartitions(ctx, "g", 7, [][]int32{{4, 1}}, false)
		must(t, err)
		await(t, m, "partition 6 led by 4", func(s Snapshot) bool {
			p, ok := s.Partition("g", 6)
			return ok && p.Leader == 4 && reflect.DeepEqual(p.Replicas, []int32{4, 1})
		})
	})
}
