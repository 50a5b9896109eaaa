package clustertest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestCreatePartitions grows a 6-partition RF=2 topic on three in-process
// brokers to 12: the new partitions get replicas as a new topic's would
// (two distinct brokers, leaders spread), leaders, and data; bad requests
// change nothing and get Kafka's codes.
func TestCreatePartitions(t *testing.T) {
	c := newMemCluster(t, 3)
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic = "grow"
	if resp, err := adm.CreateTopic(ctx, 6, 2, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	testenv.WaitFor(t, waitTimeout, "leaders of "+topic, func() (bool, string) { return allLed(metadata(t, ctx, addrs[0], topic).Topics[topic], 6), "" })
	want := map[int32][]int{}
	produce(t, ctx, cl, topic, 0, 600, 6, nil)
	expected(want, 0, 600, 6, nil)

	// Refused: fewer, equal, unknown topic, bad assignments.
	raw := func(count int32, validate bool, assignment ...[]int32) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30_000, validate
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		for _, rs := range assignment {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = rs
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreatePartitions: %v", err)
		}
		return resp.Topics[0]
	}
	for _, tc := range []struct {
		name       string
		count      int32
		assignment [][]int32
		want       *kerr.Error
	}{
		{"fewer", 3, nil, kerr.InvalidPartitions},
		{"equal", 6, nil, kerr.InvalidPartitions},
		{"unknown broker", 7, [][]int32{{1, 9}}, kerr.InvalidReplicaAssignment},
		{"duplicate replica", 7, [][]int32{{2, 2}}, kerr.InvalidReplicaAssignment},
		{"wrong replication factor", 7, [][]int32{{1, 2, 3}}, kerr.InvalidReplicaAssignment},
		{"too few lists", 8, [][]int32{{1, 2}}, kerr.InvalidReplicaAssignment},
	} {
		got := raw(tc.count, false, tc.assignment...)
		if got.ErrorCode != tc.want.Code || got.ErrorMessage == nil {
			t.Errorf("%s: error %v (%v), want %v", tc.name, kerr.ErrorForCode(got.ErrorCode), got.ErrorMessage, tc.want)
		} else {
			t.Logf("%s: %s: %s", tc.name, tc.want, *got.ErrorMessage)
		}
	}
	resp, err := adm.UpdatePartitions(ctx, 7, "no-such-topic")
	if err != nil || !errors.Is(resp["no-such-topic"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v %+v", err, resp)
	}
	// validate_only: accepted, nothing written.
	if got := raw(12, true); got.ErrorCode != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if n := len(metadata(t, ctx, addrs[1], topic).Topics[topic].Partitions); n != 6 {
		t.Fatalf("after the refused and validate-only requests: %d partitions, want 6", n)
	}

	// 6 -> 11 assigned by the cluster, then 11 -> 12 explicitly.
	if resp, err := adm.UpdatePartitions(ctx, 11, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("grow to 11: %v %+v", err, resp)
	}
	if got := raw(12, false, []int32{3, 1}); got.ErrorCode != 0 {
		t.Fatalf("grow to 12 with [3 1]: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	var td kadm.TopicDetail
	for _, addr := range addrs {
		testenv.WaitFor(t, waitTimeout, "12 led partitions on "+addr, func() (bool, string) {
			td = metadata(t, ctx, addr, topic).Topics[topic]
			return allLed(td, 12), ""
		})
	}
	leaders := map[int32]int{}
	for p := int32(0); p < 12; p++ {
		d := td.Partitions[p]
		if len(d.Replicas) != 2 || d.Replicas[0] == d.Replicas[1] {
			t.Fatalf("partition %d: replicas %v, want 2 distinct", p, d.Replicas)
		}
		if p >= 6 {
			leaders[d.Leader]++
		}
	}
	if got := td.Partitions[11].Replicas; !slices.Equal(got, []int32{3, 1}) {
		t.Fatalf("partition 11: replicas %v, want the explicit [3 1]", got)
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders of the new partitions %v: want all three brokers", leaders)
	}
	// A new client: the first one's metadata may not show the growth yet.
	produce(t, ctx, newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, 600, 1200, 12, nil)
	expected(want, 600, 1200, 12, nil)
	consumeCheck(t, ctx, addrs, topic, want)
}

// allLed: the topic has n partitions, each with a leader.
func allLed(td kadm.TopicDetail, n int) bool {
	if td.Err != nil || len(td.Partitions) != n {
		return false
	}
	for _, p := range td.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}
