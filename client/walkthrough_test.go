package client

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestRebalanceWalkthrough replays the deep dive's walk-through on a
// 3-partition topic of a 3-broker cluster, one partition led by each
// broker: consumers 1..4 join, then 1, 2 and 3 leave. After every step the
// ownership registry, read directly from the coordination service, must
// equal the range assignment of the seed's table, and stay so, and every
// member must receive exactly its partitions' records. It runs on the real
// ZooKeeper and on memcoord, the in-process coordination of tributary dev.
func TestRebalanceWalkthrough(t *testing.T) {
	for _, env := range []func(testing.TB) *coordEnv{
		newMemCoord,
		func(t testing.TB) *coordEnv { return newZooKeeper(t, 6*time.Second) },
	} {
		ce := env(t)
		t.Run(ce.name, func(t *testing.T) { walkthrough(t, ce) })
	}
}

func walkthrough(t *testing.T, ce *coordEnv) {
	cluster := newTestCluster(t, ce)
	const topic, group = "walk", "walkers"
	leaders := cluster.CreateTopic(t, topic, 3)
	if perBroker := slices.Sorted(maps.Values(leaders)); !slices.Equal(perBroker, []int32{1, 2, 3}) {
		t.Fatalf("partition leaders %v, want one partition on each of brokers 1, 2, 3", leaders)
	}
	ctx := testenv.Context(t, 2*time.Minute)

	members := map[string]*GroupConsumer{}
	streams := map[string]*Stream{}
	join := func(name string) {
		t.Helper()
		g, err := NewGroupConsumer(ctx, GroupConfig{
			GroupID:          group,
			ConsumerID:       name,
			Brokers:          cluster.Addrs(),
			Coordinator:      ce.connect,
			AutoOffsetReset:  "smallest",
			RebalanceBackoff: 100 * time.Millisecond,
			Logger:           testenv.Logger(t, slog.LevelWarn),
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { g.Close(ctx) })
		ss, err := g.CreateMessageStreams(ctx, topic, 1)
		if err != nil {
			t.Fatalf("%s: CreateMessageStreams: %v", name, err)
		}
		members[name], streams[name] = g, ss[0]
	}
	leave := func(name string) {
		t.Helper()
		if err := members[name].Close(ctx); err != nil {
			t.Fatalf("%s: Close: %v", name, err)
		}
		delete(members, name)
		delete(streams, name)
	}
	steps := []struct {
		action func()
		what   string
		want   map[int32]string
	}{
		{func() { join("consumer1") }, "consumer1 joins", map[int32]string{0: "consumer1", 1: "consumer1", 2: "consumer1"}},
		{func() { join("consumer2") }, "consumer2 joins", map[int32]string{0: "consumer1", 1: "consumer1", 2: "consumer2"}},
		{func() { join("consumer3") }, "consumer3 joins", map[int32]string{0: "consumer1", 1: "consumer2", 2: "consumer3"}},
		{func() { join("consumer4") }, "consumer4 joins", map[int32]string{0: "consumer1", 1: "consumer2", 2: "consumer3"}},
		{func() { leave("consumer1") }, "consumer1 leaves", map[int32]string{0: "consumer2", 1: "consumer3", 2: "consumer4"}},
		{func() { leave("consumer2") }, "consumer2 leaves", map[int32]string{0: "consumer3", 1: "consumer3", 2: "consumer4"}},
		{func() { leave("consumer3") }, "consumer3 leaves", map[int32]string{0: "consumer4", 1: "consumer4", 2: "consumer4"}},
	}
	for i, step := range steps {
		step.action()
		check := func() (bool, string) {
			got := readOwners(t, ce.admin, group, topic)
			if !maps.Equal(got, step.want) {
				return false, fmt.Sprintf("registry %v", got)
			}
			// Each member's own view agrees with the registry.
			for name, g := range members {
				var want []int32
				for p, owner := range step.want {
					if owner == name {
						want = append(want, p)
					}
				}
				slices.Sort(want)
				if got := g.Owned()[topic]; !slices.Equal(got, want) {
					return false, fmt.Sprintf("%s owns %v, want %v", name, got, want)
				}
			}
			return true, ""
		}
		testenv.WaitFor(t, 30*time.Second, step.what, check)
		// Settled, not passing through: it must still hold a moment later.
		time.Sleep(300 * time.Millisecond)
		if ok, state := check(); !ok {
			t.Fatalf("after %s the registry changed again: %s", step.what, state)
		}
		// Records follow the registry: one written now to each partition,
		// through the broker leading it, reaches the partition's owner, and
		// nobody hands a member a partition it does not own.
		marker := fmt.Sprintf("step-%d", i)
		sendToEach(t, cluster, topic, 3, marker)
		for name, s := range streams {
			var mine []int32
			for p, owner := range step.want {
				if owner == name {
					mine = append(mine, p)
				}
			}
			for seen := map[int32]bool{}; len(seen) < len(mine); {
				m := next(t, s)
				if !slices.Contains(mine, m.Partition) {
					t.Fatalf("after %s, %s was handed %d/%d=%s; it owns %v", step.what, name, m.Partition, m.Offset, m.Value, mine)
				}
				if string(m.Value) == marker {
					seen[m.Partition] = true
				}
			}
		}
		t.Logf("%s: owners %v, each received its partitions' records", step.what, step.want)
	}
	for name, g := range members {
		if n := g.rebalanceErrs.Load(); n != 0 {
			t.Errorf("%s: %d rebalances failed after rebalance.max.retries", name, n)
		}
	}
}

// sendToEach writes value to every partition of topic.
func sendToEach(t *testing.T, cluster *brokertest.Cluster, topic string, partitions int32, value string) {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Partitioner: ManualPartitioner()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testenv.Context(t, 30*time.Second)
	for i := range partitions {
		if err := p.Send(ctx, &Message{Topic: topic, Partition: i, Value: []byte(value)}); err != nil {
			t.Fatalf("send %s to partition %d: %v", value, i, err)
		}
	}
}

// next returns the next message of s (bounded).
func next(t *testing.T, s *Stream) *Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for m, err := range s.All(ctx) {
		if err != nil {
			t.Fatalf("stream %d: %v", s.Index(), err)
		}
		return m
	}
	t.Fatalf("stream %d ended", s.Index())
	return nil
}
