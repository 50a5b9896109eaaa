package clustertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestElectLeaders: on three in-process brokers without automatic
// rebalancing, a preferred election brings leadership back to a returned
// broker, and an unclean election gives an offline partition the live
// replica outside its ISR; every refusal has Kafka's code.
func TestElectLeaders(t *testing.T) {
	c := newMemClusterWith(t, 3, func(cfg *config.Config) { cfg.Replication.NoAutoLeaderRebalance = true })
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, addrs))
	if resp, err := adm.CreateTopic(ctx, 6, 3, nil, "elect"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	td := awaitTopic(t, ctx, addrs, "elect", func(td kadm.TopicDetail) bool { return allLed(td, 6) && allInSync(td, 3) })
	// Nothing to do: with null topics the response lists no partition.
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("preferred election of all when all lead: %v %+v", err, res)
	}

	c.crash(t, 1)
	c.restart(t, 1)
	td = awaitTopic(t, ctx, addrs, "elect", func(td kadm.TopicDetail) bool { return allLed(td, 6) && allInSync(td, 3) })
	var moved []int32
	for p, d := range td.Partitions {
		if d.Replicas[0] == 1 && d.Leader != 1 {
			moved = append(moved, p)
		}
	}
	if len(moved) == 0 {
		t.Fatalf("no partition preferring broker 1 lost its leadership: %+v", td.Partitions)
	}
	set := topicSet("elect", append(moved, 5, 99)...)
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range moved {
		if r := res["elect"][p]; r.Err != nil {
			t.Fatalf("preferred election of partition %d: %v %s", p, r.Err, r.ErrMessage)
		}
	}
	if r := res["elect"][99]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("partition 99: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
	if !slices.Contains(moved, 5) {
		if r := res["elect"][5]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Errorf("partition 5, led by its preferred replica: %v, want ELECTION_NOT_NEEDED", r.Err)
		}
	}
	td = awaitTopic(t, ctx, addrs, "elect", func(td kadm.TopicDetail) bool {
		for _, d := range td.Partitions {
			if d.Leader != d.Replicas[0] {
				return false
			}
		}
		return true
	})

	// A preferred replica that is down cannot be elected.
	c.crash(t, 2)
	live := bootstrap(c, 3)
	adm = kadm.NewClient(newClient(t, live))
	awaitTopic(t, ctx, live, "elect", func(td kadm.TopicDetail) bool { return allLed(td, 6) })
	set = kadm.TopicsSet{}
	for p, d := range td.Partitions {
		if d.Replicas[0] == 2 {
			set.Add("elect", p)
		}
	}
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil || len(res["elect"]) == 0 {
		t.Fatalf("preferred election with broker 2 down: %v %+v", err, res)
	}
	for p, r := range res["elect"] {
		if !errors.Is(r.Err, kerr.PreferredLeaderNotAvailable) {
			t.Errorf("partition %d, preferring the dead broker 2: %v, want PREFERRED_LEADER_NOT_AVAILABLE", p, r.Err)
		}
	}
	c.restart(t, 2)
	live = bootstrap(c, 3)
	adm = kadm.NewClient(newClient(t, live))

	// Unclean: replicas [x y]; y falls out of the ISR, then x dies, then y
	// returns: the partition is offline until the unclean election.
	if resp, err := adm.CreateTopic(ctx, 1, 2, nil, "offline"); err != nil || resp.Err != nil {
		t.Fatalf("create offline: %v %v", err, resp.Err)
	}
	od := awaitTopic(t, ctx, live, "offline", func(td kadm.TopicDetail) bool { return allLed(td, 1) && allInSync(td, 2) })
	x, y := od.Partitions[0].Replicas[0], od.Partitions[0].Replicas[1]
	produceN(t, ctx, newClient(t, live), "offline", 10)
	c.crash(t, y)
	live = bootstrap(c, 3)
	awaitTopic(t, ctx, live, "offline", func(td kadm.TopicDetail) bool {
		return td.Partitions[0].Leader == x && slices.Equal(td.Partitions[0].ISR, []int32{x})
	})
	produceN(t, ctx, newClient(t, live), "offline", 10)
	adm = kadm.NewClient(newClient(t, live))
	// A partition with a live leader needs no unclean election.
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, topicSet("offline", 0))
	if err != nil || !errors.Is(res["offline"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election with a live leader: %v %+v", err, res)
	}
	c.crash(t, x)
	c.restart(t, y)
	live = bootstrap(c, 3)
	adm = kadm.NewClient(newClient(t, live))
	awaitTopic(t, ctx, live, "offline", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader == -1 })
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, topicSet("offline", 0))
	if err != nil || res["offline"][0].Err != nil {
		t.Fatalf("unclean election of the offline partition: %v %+v", err, res)
	}
	awaitTopic(t, ctx, live, "offline", func(td kadm.TopicDetail) bool {
		return td.Partitions[0].Leader == y && slices.Equal(td.Partitions[0].ISR, []int32{y})
	})
	// y has the first 10 records only: the 10 it missed are lost, which is
	// what an unclean election means.
	if end := endOffset(t, ctx, live, "offline"); end != 10 {
		t.Fatalf("end offset after the unclean election: %d, want 10", end)
	}
	// No live replica at all: nothing to elect.
	c.crash(t, y)
	live = bootstrap(c, 3)
	adm = kadm.NewClient(newClient(t, live))
	awaitTopic(t, ctx, live, "offline", func(td kadm.TopicDetail) bool { return td.Partitions[0].Leader == -1 })
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, topicSet("offline", 0))
	if err != nil || !errors.Is(res["offline"][0].Err, kerr.EligibleLeadersNotAvailable) {
		t.Fatalf("unclean election with no live replica: %v %+v", err, res)
	}
}

func topicSet(topic string, parts ...int32) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	s.Add(topic, parts...)
	return s
}

// awaitTopic waits until cond holds for the topic in the metadata of the
// first of addrs, and returns that detail.
func awaitTopic(t *testing.T, ctx context.Context, addrs []string, topic string, cond func(kadm.TopicDetail) bool) kadm.TopicDetail {
	t.Helper()
	var td kadm.TopicDetail
	testenv.WaitFor(t, waitTimeout, "topic "+topic, func() (bool, string) {
		td = metadata(t, ctx, addrs[0], topic).Topics[topic]
		return td.Err == nil && len(td.Partitions) > 0 && cond(td), ""
	})
	return td
}

// allInSync: every partition has n replicas in its ISR.
func allInSync(td kadm.TopicDetail, n int) bool {
	for _, p := range td.Partitions {
		if len(p.ISR) != n {
			return false
		}
	}
	return true
}

// produceN produces n records to partition 0 of topic, acks=all.
func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// endOffset is partition 0's end offset.
func endOffset(t *testing.T, ctx context.Context, addrs []string, topic string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(newClient(t, addrs)).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Offset
}
