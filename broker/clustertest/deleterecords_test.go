package clustertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestDeleteRecords: DeleteRecords on a replicated topic moves the log
// start offset of every replica (ListOffsets earliest asked of each broker
// as Kafka's debugging replica), also after a follower restarts; fetches
// below it are OFFSET_OUT_OF_RANGE; -1 means the high watermark; past it
// is refused and changes nothing.
func TestDeleteRecords(t *testing.T) {
	c := newMemCluster(t, 3)
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic = "dr"
	if resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"segment.bytes": kadm.StringPtr("2048")}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	awaitTopic(t, ctx, addrs, topic, func(td kadm.TopicDetail) bool { return allLed(td, 3) && allInSync(td, 3) })
	produce(t, ctx, cl, topic, 0, 300, 3, nil) // 100 per partition

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 57})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: -1})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 2, At: 101})
	resp, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 57 {
		t.Fatalf("partition 0 to 57: %+v", r)
	}
	if r, _ := resp.Lookup(topic, 1); r.Err != nil || r.LowWatermark != 100 {
		t.Fatalf("partition 1 to the high watermark: %+v", r)
	}
	if r, _ := resp.Lookup(topic, 2); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("partition 2 past the high watermark: %+v", r)
	}
	// The answer waited for the in-sync followers: every replica has moved.
	want := map[int32]int64{0: 57, 1: 100, 2: 0}
	if got, ok := earliestEverywhere(t, ctx, c, topic, want); !ok {
		t.Fatalf("log start offsets (partition, broker) right after DeleteRecords: %v, want %v on every replica", got, want)
	}

	// The follower's start survives its restart.
	td := metadata(t, ctx, addrs[0], topic).Topics[topic]
	follower := td.Partitions[0].Replicas[1]
	if follower == td.Partitions[0].Leader {
		follower = td.Partitions[0].Replicas[2]
	}
	c.crash(t, follower)
	c.restart(t, follower)
	awaitEarliest(t, ctx, c, topic, want)

	// Below the start: OFFSET_OUT_OF_RANGE from the leader; at it, records.
	td = awaitTopic(t, ctx, bootstrap(c, 3), topic, func(td kadm.TopicDetail) bool { return allLed(td, 3) })
	leader := brokerClient(t, c, td.Partitions[0].Leader)
	for _, tc := range []struct {
		offset int64
		code   int16
	}{{56, kerr.OffsetOutOfRange.Code}, {57, 0}} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = tc.offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		fr, err := leader.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		p := fr.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != tc.code || (tc.code == 0 && (p.LogStartOffset != 57 || len(p.RecordBatches) == 0)) {
			t.Fatalf("fetch at %d: error %v, log start %d, %d bytes", tc.offset, kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset, len(p.RecordBatches))
		}
	}
}

// brokerClient is a client that sends requests to broker id only.
func brokerClient(t *testing.T, c *memCluster, id int32) *kgo.Broker {
	t.Helper()
	return newClient(t, []string{c.addr(id)}).Broker(int(id))
}

// awaitEarliest waits until earliestEverywhere holds.
func awaitEarliest(t *testing.T, ctx context.Context, c *memCluster, topic string, want map[int32]int64) {
	t.Helper()
	var got map[[2]int32]int64
	testenv.WaitFor(t, waitTimeout, "log start offsets on every replica", func() (bool, string) {
		var ok bool
		got, ok = earliestEverywhere(t, ctx, c, topic, want)
		return ok, ""
	})
	t.Logf("log start offsets (partition, broker): %v", got)
}

// earliestEverywhere asks every replica of every partition for ListOffsets
// earliest, as Kafka's debugging replica (-2), and reports whether each
// answered want.
func earliestEverywhere(t *testing.T, ctx context.Context, c *memCluster, topic string, want map[int32]int64) (map[[2]int32]int64, bool) {
	t.Helper()
	td := metadata(t, ctx, bootstrap(c, 3)[0], topic).Topics[topic]
	got := map[[2]int32]int64{}
	ok := true
	for p, d := range td.Partitions {
		for _, id := range d.Replicas {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -2
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -2
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := brokerClient(t, c, id).Request(ctx, req)
			if err != nil {
				return got, false
			}
			sp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			got[[2]int32{p, id}] = sp.Offset
			ok = ok && sp.ErrorCode == 0 && sp.Offset == want[p]
		}
	}
	return got, ok
}
