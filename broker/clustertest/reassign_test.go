package clustertest

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestReassignPartitions moves every replica of a topic off broker 2 of 3
// under produce load with acks=all: the reassignments complete (listed
// while in progress, not after), no acknowledged record is lost, leaders
// are on the target replicas, and broker 2 keeps no data of the topic.
func TestReassignPartitions(t *testing.T) {
	c := newMemCluster(t, 3)
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, addrs))
	const topic = "move"
	if resp, err := adm.CreateTopic(ctx, 6, 2, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	td := awaitTopic(t, ctx, addrs, topic, func(td kadm.TopicDetail) bool { return allLed(td, 6) && allInSync(td, 2) })

	// Load: acks=all records, each to partition i%6, until stopped.
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	var mu sync.Mutex
	acked := map[int32][]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := int32(i % 6)
			r := &kgo.Record{Topic: topic, Partition: p, Key: []byte("k" + strconv.Itoa(i)), Value: value(i, 100)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			mu.Lock()
			acked[p] = append(acked[p], i)
			mu.Unlock()
		}
	}()
	testenv.WaitFor(t, waitTimeout, "records acknowledged before the move", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked[5]) >= 20, ""
	})

	if n := topicDirs(t, c.Dir(2), topic); n == 0 {
		t.Fatalf("broker 2 holds no replica of %s before the move", topic)
	}
	targets := map[int32][]int32{}
	set := kadm.AlterPartitionAssignmentsReq{}
	for p, d := range td.Partitions {
		target := slices.DeleteFunc(slices.Clone(d.Replicas), func(id int32) bool { return id == 2 })
		for _, id := range []int32{1, 3} {
			if len(target) < 2 && !slices.Contains(target, id) {
				target = append(target, id)
			}
		}
		targets[p] = target
		set.Assign(topic, p, target)
	}
	res, err := adm.AlterPartitionAssignments(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatalf("alter partition assignments: %v", err)
	}
	testenv.WaitFor(t, waitTimeout, "reassignments complete", func() (bool, string) {
		listed, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil || len(listed) != 0 {
			return false, ""
		}
		td = metadata(t, ctx, addrs[0], topic).Topics[topic]
		for p, d := range td.Partitions {
			if !slices.Equal(d.Replicas, targets[p]) || !slices.Contains(targets[p], d.Leader) || len(d.ISR) != 2 {
				return false, ""
			}
		}
		return true, ""
	})
	// More records after the move, then stop and check them all.
	mu.Lock()
	n := len(acked[5])
	mu.Unlock()
	testenv.WaitFor(t, waitTimeout, "records acknowledged after the move", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked[5]) >= n+20, ""
	})
	close(stop)
	wg.Wait()
	consumeCheck(t, ctx, addrs, topic, acked)

	// Broker 2 keeps nothing of the topic.
	testenv.WaitFor(t, waitTimeout, "broker 2 without data of "+topic, func() (bool, string) {
		return topicDirs(t, c.Dir(2), topic) == 0, ""
	})

	// Refusals: a dead or unknown broker, a repeated one; cancelling
	// nothing.
	bad := kadm.AlterPartitionAssignmentsReq{}
	bad.Assign(topic, 0, []int32{1, 9})
	bad.Assign(topic, 1, []int32{3, 3})
	bad.CancelAssign(topic, 2)
	bad.Assign(topic, 42, []int32{1, 3})
	res, err = adm.AlterPartitionAssignments(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]error{0: kerr.InvalidReplicaAssignment, 1: kerr.InvalidReplicaAssignment,
		2: kerr.NoReassignmentInProgress, 42: kerr.UnknownTopicOrPartition} {
		if got := res[topic][p].Err; !errors.Is(got, want) {
			t.Errorf("partition %d: %v, want %v", p, got, want)
		}
	}
	if d := metadata(t, ctx, addrs[0], topic).Topics[topic].Partitions[0]; !slices.Equal(d.Replicas, targets[0]) {
		t.Errorf("a refused request changed partition 0: %v", d.Replicas)
	}
}

// topicDirs counts the partition directories of topic in a log dir.
func topicDirs(t *testing.T, dir, topic string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), topic+"-") {
			n++
		}
	}
	return n
}
