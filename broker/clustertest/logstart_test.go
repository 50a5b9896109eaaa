package clustertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// logStartCluster is what the log start tests do to a cluster of three
// brokers, in this process or as processes on ZooKeeper.
type logStartCluster interface {
	testCluster
	// stop stops broker id cleanly (a controlled shutdown).
	stop(t *testing.T, id int32)
	// start starts a stopped broker id on its directory and port.
	start(t *testing.T, id int32)
	// logDir is broker id's log directory.
	logDir(id int32) string
}

type memLogStart struct{ *memCluster }

func (c memLogStart) stop(t *testing.T, id int32)  { t.Helper(); c.Stop(t, id) }
func (c memLogStart) start(t *testing.T, id int32) { t.Helper(); c.Restart(t, id) }
func (c memLogStart) logDir(id int32) string       { return c.Dir(id) }

type procLogStart struct{ *replCluster }

func (c procLogStart) stop(t *testing.T, id int32)  { t.Helper(); c.Stop(t, id) }
func (c procLogStart) start(t *testing.T, id int32) { t.Helper(); c.Start(t, id) }
func (c procLogStart) logDir(id int32) string       { return c.LogDir(id) }

// logStartRetentionCheck is log.retention.check.interval.ms in these tests.
const logStartRetentionCheck = 200 * time.Millisecond

var logStartBackends = []struct {
	name  string
	start func(t *testing.T) logStartCluster
}{
	{"zookeeper", func(t *testing.T) logStartCluster {
		return procLogStart{newReplCluster(t, 3, map[string]string{
			"log.retention.check.interval.ms": strconv.Itoa(int(logStartRetentionCheck.Milliseconds())),
		})}
	}},
	{"memcoord", func(t *testing.T) logStartCluster {
		return memLogStart{newMemClusterWith(t, 3, func(cfg *config.Config) { cfg.RetentionCheckInterval = logStartRetentionCheck })}
	}},
}

// TestReplicaBelowLeaderLogStart is issue 39's second item: a replica
// whose log ends below its leader's log start offset (a replica added
// after DeleteRecords, or after retention deleted the first segments, or a
// broker restarted with an empty log directory, as after a disk was
// replaced) starts over at the leader's log start, as Kafka's follower does
// on OFFSET_OUT_OF_RANGE, and joins the ISR; a reassignment adding it is in
// progress until then. Each new copy is then proved by making it the only
// replica and reading every record back from it by value.
func TestReplicaBelowLeaderLogStart(t *testing.T) {
	for _, b := range logStartBackends {
		t.Run(b.name, func(t *testing.T) {
			c := b.start(t)
			ctx := testenv.Context(t, 5*time.Minute)
			t.Run("AfterDeleteRecords", func(t *testing.T) {
				topic, leader := createSingleReplica(t, ctx, c, "g", nil)
				produceLogStart(t, ctx, c, topic, 0, 100)
				deleteRecordsBefore(t, ctx, c, topic, 50)
				newReplicasCatchUp(t, ctx, c, topic, leader, 50, 100)
			})
			t.Run("AfterRetention", func(t *testing.T) {
				topic, leader := createSingleReplica(t, ctx, c, "r", map[string]*string{
					"segment.bytes": kadm.StringPtr("2048"), "retention.bytes": kadm.StringPtr("4096"),
				})
				produceLogStart(t, ctx, c, topic, 0, 200)
				start := awaitLogStart(t, ctx, c, topic, leader)
				newReplicasCatchUp(t, ctx, c, topic, leader, start, 200)
			})
			t.Run("EmptiedLogDir", func(t *testing.T) {
				adm := kadm.NewClient(newClient(t, bootstrap(c, 3)))
				const topic = "e"
				resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
					"segment.bytes": kadm.StringPtr("2048"), "retention.bytes": kadm.StringPtr("4096"),
				}, topic)
				if err != nil || resp.Err != nil {
					t.Fatalf("create %s: %v %v", topic, err, resp.Err)
				}
				td := awaitTopic(t, ctx, bootstrap(c, 3), topic, func(td kadm.TopicDetail) bool { return allLed(td, 1) && allInSync(td, 3) })
				leader := td.Partitions[0].Leader
				produceLogStart(t, ctx, c, topic, 0, 200)
				start := awaitLogStart(t, ctx, c, topic, leader)
				follower := slices.DeleteFunc(slices.Clone(td.Partitions[0].Replicas), func(id int32) bool { return id == leader })[0]

				// The operator replaces the follower's disk.
				c.stop(t, follower)
				if err := os.RemoveAll(c.logDir(follower)); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(c.logDir(follower), 0o755); err != nil {
					t.Fatal(err)
				}
				c.start(t, follower)
				awaitTopic(t, ctx, bootstrap(c, 3), topic, func(td kadm.TopicDetail) bool { return allInSync(td, 3) })
				checkReplicaOffsets(t, ctx, c, topic, []int32{follower}, start, 200)
				onlyOn(t, ctx, c, topic, follower, start, 200)
			})
		})
	}
}

// createSingleReplica creates topic prefix-<n> with one partition and one
// replica and returns its name and leader.
func createSingleReplica(t *testing.T, ctx context.Context, c logStartCluster, topic string, configs map[string]*string) (string, int32) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, bootstrap(c, 3)))
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	td := awaitTopic(t, ctx, bootstrap(c, 3), topic, func(td kadm.TopicDetail) bool { return allLed(td, 1) })
	return topic, td.Partitions[0].Leader
}

// logStartValue is record i's value.
func logStartValue(topic string, i int) string { return fmt.Sprintf("%s-%06d-%040d", topic, i, i) }

// produceLogStart produces records [from, to) to partition 0 with acks=all.
func produceLogStart(t *testing.T, ctx context.Context, c logStartCluster, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, bootstrap(c, 3), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := from; i < to; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(logStartValue(topic, i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d to %s: %v", i, topic, err)
		}
	}
}

func deleteRecordsBefore(t *testing.T, ctx context.Context, c logStartCluster, topic string, offset int64) {
	t.Helper()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	resp, err := kadm.NewClient(newClient(t, bootstrap(c, 3))).DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup(topic, 0); r.Err != nil || r.LowWatermark != offset {
		t.Fatalf("delete records of %s before %d: %+v", topic, offset, r)
	}
}

// awaitLogStart waits until retention moved the leader's log start past
// 0, then turns retention.bytes off so that no copy moves it further (a
// new copy's segments roll elsewhere, and retention would cut them
// elsewhere too), and returns the leader's log start.
func awaitLogStart(t *testing.T, ctx context.Context, c logStartCluster, topic string, leader int32) int64 {
	t.Helper()
	var start int64
	testenv.WaitFor(t, waitTimeout, "retention deleting the first segments of "+topic, func() (bool, string) {
		start, _ = replicaOffsets(ctx, c, topic, leader)
		return start > 0, fmt.Sprintf("log start %d", start)
	})
	adm := kadm.NewClient(newClient(t, bootstrap(c, 3)))
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: kadm.StringPtr("-1")}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatalf("retention.bytes=-1 on %s: %v", topic, err)
	}
	// A retention pass may have been under way: the start is read once
	// it has stayed put for a few passes.
	last := int64(-1)
	testenv.WaitFor(t, waitTimeout, "the log start of "+topic+" settling", func() (bool, string) {
		prev := last
		time.Sleep(3 * logStartRetentionCheck)
		last, _ = replicaOffsets(ctx, c, topic, leader)
		return last == prev, fmt.Sprintf("log start %d then %d", prev, last)
	})
	return last
}

// newReplicasCatchUp reassigns topic's partition from [leader] to all
// three brokers and checks that the move is listed in progress until the
// new replicas are in the ISR, that they start at the leader's log start,
// that acks=all records meanwhile are acknowledged in milliseconds, and
// that each new replica alone serves every record.
func newReplicasCatchUp(t *testing.T, ctx context.Context, c logStartCluster, topic string, leader int32, start, end int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, bootstrap(c, 3)))
	target := []int32{leader}
	for id := int32(1); id <= 3; id++ {
		if id != leader {
			target = append(target, id)
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, target)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res.Error() != nil {
		t.Fatalf("reassign %s to %v: %v %v", topic, target, err, res.Error())
	}
	set := kadm.TopicsSet{}
	set.Add(topic, 0)
	// The controller completes the move once its new replicas are in
	// sync (KIP-455); until then it is listed in progress.
	testenv.WaitFor(t, waitTimeout, "the new replicas of "+topic+" in the ISR", func() (bool, string) {
		listed, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return false, err.Error()
		}
		p := metadata(t, ctx, c.addr(leader), topic).Topics[topic].Partitions[0]
		return len(p.ISR) == 3 && len(listed[topic]) == 0, fmt.Sprintf("replicas %v isr %v listed %v", p.Replicas, p.ISR, listed[topic])
	})
	checkReplicaOffsets(t, ctx, c, topic, target, start, end)

	// acks=all with every replica in sync: milliseconds, not seconds.
	cl := newClient(t, bootstrap(c, 3), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var slowest time.Duration
	for i := end; i < end+20; i++ {
		t0 := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(logStartValue(topic, int(i)))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	t.Logf("%s: slowest of 20 acks=all produces to 3 in-sync replicas: %v", topic, slowest)
	if slowest > time.Second {
		t.Errorf("%s: an acks=all produce took %v", topic, slowest)
	}
	onlyOn(t, ctx, c, topic, target[1], start, end+20)
}

// checkReplicaOffsets checks that each of ids holds [start, end) of topic's
// partition 0.
func checkReplicaOffsets(t *testing.T, ctx context.Context, c logStartCluster, topic string, ids []int32, start, end int64) {
	t.Helper()
	for _, id := range ids {
		var s, e int64
		testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d holding %s from %d to %d", id, topic, start, end), func() (bool, string) {
			s, e = replicaOffsets(ctx, c, topic, id)
			return s == start && e == end, fmt.Sprintf("log start %d, high watermark %d", s, e)
		})
	}
}

// replicaOffsets asks broker id, as Kafka's debugging replica (-2), for
// its copy's earliest and latest offsets of topic's partition 0; -1 on an
// error.
func replicaOffsets(ctx context.Context, c logStartCluster, topic string, id int32) (int64, int64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(id)))
	if err != nil {
		return -1, -1
	}
	defer cl.Close()
	var out [2]int64
	for i, ts := range []int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -2
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			return -1, -1
		}
		sp := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			return -1, -1
		}
		out[i] = sp.Offset
	}
	return out[0], out[1]
}

// onlyOn moves topic's partition to broker id alone (the controller
// completes it once id is in sync, and id leads) and reads every record
// of [start, end) back from it by value.
func onlyOn(t *testing.T, ctx context.Context, c logStartCluster, topic string, id int32, start, end int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, bootstrap(c, 3)))
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{id})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("reassign %s to [%d]: %v %v", topic, id, err, res.Error())
	}
	awaitTopic(t, ctx, bootstrap(c, 3), topic, func(td kadm.TopicDetail) bool {
		p := td.Partitions[0]
		return p.Leader == id && slices.Equal(p.Replicas, []int32{id})
	})
	cl := newClient(t, []string{c.addr(id)}, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(start)},
	}))
	for next := start; next < end; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s on broker %d alone: read up to %d of [%d, %d): %v", topic, id, next, start, end, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next || string(r.Value) != logStartValue(topic, int(r.Offset)) {
				t.Fatalf("%s on broker %d alone: offset %d (want %d): %q, want %q", topic, id, r.Offset, next, r.Value, logStartValue(topic, int(next)))
			}
			next++
		})
	}
}
