package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestConsumerGroupCoordinatorFailover: a KIP-848 group of three
// franz-go members over three brokers; the group's coordinator broker is
// stopped under produce load. The new coordinator reads the group back
// from __consumer_offsets: its epoch and every member's assignment carry
// over (the members go on heartbeating, no member rejoins from scratch),
// every record is processed and the committed offsets end at the
// partitions' ends.
func TestConsumerGroupCoordinatorFailover(t *testing.T) {
	c := newMemClusterWith(t, 3, func(cfg *config.Config) {
		cfg.Groups.OffsetsTopicPartitions = 3
		cfg.Groups.ConsumerSessionTimeout = 10 * time.Second
		cfg.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
		cfg.Replication.LagTimeMax = 2 * time.Second
		cfg.Replication.ControlledShutdownTimeout = 20 * time.Second
	})
	ctx := testenv.Context(t, 3*time.Minute)
	const group, topic, parts, total = "cg-failover", "cg-failover-t", 6, 2000
	addrs := func() []string { return bootstrap(c, 3) }
	createReplicated(t, ctx, addrs(), topic, parts, 3, nil)
	p := kafkatest.NewProcessed()

	memberCtx, stop := context.WithCancel(ctx)
	defer stop()
	var members []*kgo.Client
	for range 3 {
		members = append(members, kafkatest.RunMember848(t, memberCtx, addrs(), group, topic, p, nil))
	}
	defer func() {
		stop()
		for _, m := range members {
			m.Close()
		}
	}()
	admin := newClient(t, addrs())
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)
	before := kafkatest.DescribeConsumerGroup(t, ctx, admin, group)

	produced := make(chan error, 1)
	go func() {
		produced <- kafkatest.ProduceNumbered(ctx, newClient(t, addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts, total)
	}()

	live := func(id int32) bool { return c.Broker(id) != nil }
	coordinator := liveCoordinator(t, ctx, addrs, live, group)
	c.crash(t, coordinator)
	moved := liveCoordinator(t, ctx, addrs, live, group)
	if moved == coordinator {
		t.Fatalf("coordinator still %d", moved)
	}
	admin2 := newClient(t, addrs())
	kafkatest.AwaitConsumerGroup(t, ctx, admin2, group, 3, parts)
	after := kafkatest.DescribeConsumerGroup(t, ctx, admin2, group)
	if after.Epoch != before.Epoch {
		t.Errorf("group epoch %d on the new coordinator, %d before: the group was not resumed", after.Epoch, before.Epoch)
	}
	for i, m := range before.Members {
		a := after.Members[i]
		if a.MemberID != m.MemberID || a.MemberEpoch != m.MemberEpoch {
			t.Errorf("member %s at epoch %d before, %s at %d after", m.MemberID, m.MemberEpoch, a.MemberID, a.MemberEpoch)
		}
	}

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	kafkatest.AwaitProcessedAndCommitted(t, ctx, admin2, group, topic, p, total)
}

// TestConsumerGroupCoordinatorKilled: the same on three `tributary
// broker` processes on ZooKeeper, the coordinator killed with SIGKILL: the
// group's records, appended with acks=all to the replicated offsets
// topic, are on the new coordinator, which resumes the group with the
// same member ids and epochs.
func TestConsumerGroupCoordinatorKilled(t *testing.T) {
	t.Parallel() // broker processes of its own, mostly waited on (acks=all produce, the failover)
	c := newGroupCluster(t, zktest.Chroot(t, zk(t), "cg-killed"))
	ctx := testenv.Context(t, 3*time.Minute)
	const group, topic, parts, total = "cg-killed", "cg-killed-t", 6, 2000
	createReplicated(t, ctx, c.Addrs(), topic, parts, 3, nil)
	p := kafkatest.NewProcessed()
	memberCtx, stop := context.WithCancel(ctx)
	defer stop()
	var members []*kgo.Client
	for range 3 {
		members = append(members, kafkatest.RunMember848(t, memberCtx, c.Addrs(), group, topic, p, nil))
	}
	defer func() {
		stop()
		for _, m := range members {
			m.Close()
		}
	}()
	admin := newClient(t, c.Addrs())
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)
	before := kafkatest.DescribeConsumerGroup(t, ctx, admin, group)

	produced := make(chan error, 1)
	go func() {
		produced <- kafkatest.ProduceNumbered(ctx, newClient(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts, total)
	}()
	coordinator := c.coordinatorOf(t, ctx, group)
	c.Kill(t, coordinator)
	start := time.Now()
	moved := c.coordinatorOf(t, ctx, group)
	if moved == coordinator {
		t.Fatalf("coordinator still %d after it was killed", moved)
	}
	admin2 := newClient(t, c.Addrs())
	kafkatest.AwaitConsumerGroup(t, ctx, admin2, group, 3, parts)
	t.Logf("coordinator moved from broker %d to %d, group stable there %v after the kill", coordinator, moved, time.Since(start))
	after := kafkatest.DescribeConsumerGroup(t, ctx, admin2, group)
	if after.Epoch != before.Epoch {
		t.Errorf("group epoch %d on the new coordinator, %d before", after.Epoch, before.Epoch)
	}
	for i, m := range before.Members {
		if a := after.Members[i]; a.MemberID != m.MemberID || a.MemberEpoch != m.MemberEpoch {
			t.Errorf("member %s at epoch %d before, %s at %d after", m.MemberID, m.MemberEpoch, a.MemberID, a.MemberEpoch)
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	kafkatest.AwaitProcessedAndCommitted(t, ctx, admin2, group, topic, p, total)
}
