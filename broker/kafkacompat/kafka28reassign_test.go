package kafkacompat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestKafka28ReassignZooKeeper runs Kafka 2.8.2's ReassignPartitionsCommand
// with --zookeeper, which writes /admin/reassign_partitions and watches it
// go, with --throttle, which writes the rates into /config/brokers/<id>
// and the topic's throttled replicas itself: every broker applies the
// rates, every replica of a topic moves off broker 2 of 3, --verify
// removes the throttle, and the records produced before are all there.
func TestKafka28ReassignZooKeeper(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka28Tools(t)
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const class = "kafka.admin.ReassignPartitionsCommand"
	const topic = "compat-zk-reassign"
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, 3, 2, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	var td kadm.TopicDetail
	testenv.WaitFor(t, waitTimeout, topic+" in sync", func() (bool, string) {
		md, err := kafkatest.MetadataFrom(ctx, c.Addr(1), topic)
		if err != nil {
			return false, ""
		}
		td = md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != 3 {
			return false, ""
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != 2 {
				return false, ""
			}
		}
		return true, ""
	})
	produced := produceRounds(t, ctx, c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())), topic, 3, 5, 10)

	var entries []string
	targets := map[int32][]int32{}
	for p, d := range td.Partitions {
		target := slices.DeleteFunc(slices.Clone(d.Replicas), func(id int32) bool { return id == 2 })
		for _, id := range []int32{1, 3} {
			if len(target) < 2 && !slices.Contains(target, id) {
				target = append(target, id)
			}
		}
		targets[p] = target
		entries = append(entries, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%d,%d]}`, topic, p, target[0], target[1]))
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[`+strings.Join(entries, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, ctx, tools, class, "--zookeeper", c.Connect(), "--execute", "--throttle", "10000000", "--reassignment-json-file", plan)
	t.Logf("--execute --zookeeper --throttle 10000000:\n%s", out)
	// The tool wrote the rates into /config/brokers/<id> itself; every
	// broker of the move applies them (they stay until --verify).
	for id := int32(1); id <= 3; id++ {
		for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			awaitBrokerConfig(t, ctx, c, id, k, "10000000", kmsg.ConfigSourceDynamicBrokerConfig)
		}
	}
	testenv.WaitFor(t, waitTimeout, "--verify --zookeeper reporting every reassignment complete", func() (bool, string) {
		out = mustRun(t, ctx, tools, class, "--zookeeper", c.Connect(), "--verify", "--reassignment-json-file", plan)
		return strings.Count(out, "is complete") == 3, ""
	})
	t.Logf("--verify --zookeeper:\n%s", out)
	// --verify removed the rates and the topic's throttled replicas.
	for id := int32(1); id <= 3; id++ {
		for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
			testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d without %s", id, k), func() (bool, string) {
				v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, k)
				return err == nil && src != kmsg.ConfigSourceDynamicBrokerConfig, fmt.Sprintf("%s (%v) %v", v, src, err)
			})
		}
	}
	for _, k := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		testenv.WaitFor(t, waitTimeout, topic+" without "+k, func() (bool, string) {
			v, src, err := describeTopicConfig(ctx, c.Addr(1), topic, k)
			return err == nil && src != kmsg.ConfigSourceDynamicTopicConfig, fmt.Sprintf("%q (%v) %v", v, src, err)
		})
	}
	md, err := kafkatest.MetadataFrom(ctx, c.Addr(1), topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, d := range md.Topics[topic].Partitions {
		if !slices.Equal(d.Replicas, targets[p]) || d.Leader == 2 {
			t.Fatalf("partition %d: replicas %v leader %d, want %v", p, d.Replicas, d.Leader, targets[p])
		}
	}
	testenv.WaitFor(t, waitTimeout, "broker 2 without directories of "+topic, func() (bool, string) { return topicDirCount(t, c.LogDir(2), topic) == 0, "" })
	rd := c.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	want := 0
	for _, rs := range produced {
		want += len(rs)
	}
	for got < want {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records after the move", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if rec := produced[r.Partition][r.Offset]; string(r.Key) != rec.key || string(r.Value) != rec.value {
				t.Fatalf("%s-%d@%d: key %q, want %q", topic, r.Partition, r.Offset, r.Key, rec.key)
			}
			got++
		})
	}
}
