package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/brokertest"
)

// mustRun runs the CLI and fails the test on error.
func mustRun(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	res := runCLI(t, 60*time.Second, stdin, args...)
	if res.err != nil {
		t.Fatalf("tributary %s: %v\nstderr: %s", strings.Join(args, " "), res.err, res.stderr)
	}
	return res
}

func TestTopicsLifecycle(t *testing.T) {
	// The fixture's broker id is 1, not Kafka's default 0, so the describe
	// output below proves the id reaches the Leader, Replicas and Isr columns.
	bs := brokertest.New(t).Addr()

	res := mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "events", "--partitions", "3")
	if res.stdout != "Created topic events.\n" {
		t.Fatalf("create printed %q", res.stdout)
	}
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "clicks")

	res = mustRun(t, "", "topics", "list", "--bootstrap", bs)
	if res.stdout != "clicks\nevents\n" {
		t.Fatalf("list printed %q, want clicks and events sorted", res.stdout)
	}

	res = mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "events")
	want := "Topic: events\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=delete\n" +
		"\tTopic: events\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n" +
		"\tTopic: events\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\n" +
		"\tTopic: events\tPartition: 2\tLeader: 1\tReplicas: 1\tIsr: 1\n"
	if res.stdout != want {
		t.Fatalf("describe printed\n%q\nwant\n%q", res.stdout, want)
	}

	// The cleanup policy is shown whatever its source.
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "state", "--config", "cleanup.policy=compact")
	res = mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "state")
	if !strings.HasPrefix(res.stdout, "Topic: state\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: cleanup.policy=compact\n") {
		t.Fatalf("describe of a compacted topic printed\n%q", res.stdout)
	}

	// Without --topic, describe covers every topic in name order.
	res = mustRun(t, "", "topics", "describe", "--bootstrap", bs)
	if !strings.HasPrefix(res.stdout, "Topic: clicks\tPartitionCount: 1\t") || !strings.Contains(res.stdout, "\nTopic: events\tPartitionCount: 3\t") {
		t.Fatalf("describe of all topics printed\n%s", res.stdout)
	}

	res = runCLI(t, 30*time.Second, "", "topics", "create", "--bootstrap", bs, "--topic", "events")
	// The broker's message is Kafka's, said once (it was our wrapped chain).
	if want := "create topic events: TOPIC_ALREADY_EXISTS: Topic with this name already exists. (Topic 'events' already exists.)"; res.err == nil || res.err.Error() != want {
		t.Fatalf("second create: err %v, want %q", res.err, want)
	}
	res = mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "events", "--if-not-exists")
	if res.stdout != "" {
		t.Fatalf("create --if-not-exists of an existing topic printed %q", res.stdout)
	}

	res = mustRun(t, "", "topics", "delete", "--bootstrap", bs, "--topic", "events")
	if res.stdout != "Deleted topic events.\n" {
		t.Fatalf("delete printed %q", res.stdout)
	}
	res = mustRun(t, "", "topics", "list", "--bootstrap", bs)
	if res.stdout != "clicks\nstate\n" {
		t.Fatalf("list after delete printed %q", res.stdout)
	}
	res = runCLI(t, 30*time.Second, "", "topics", "describe", "--bootstrap", bs, "--topic", "events")
	if !errors.Is(res.err, errTopicMissing) {
		t.Fatalf("describe of deleted topic: err %v, want errTopicMissing", res.err)
	}
	res = runCLI(t, 30*time.Second, "", "topics", "delete", "--bootstrap", bs, "--topic", "events")
	if !errors.Is(res.err, errTopicMissing) {
		t.Fatalf("delete of deleted topic: err %v, want errTopicMissing", res.err)
	}
}

func TestTopicsUnreachableBrokerFails(t *testing.T) {
	res := runCLI(t, 20*time.Second, "", "topics", "list", "--bootstrap", "127.0.0.1:1", "--request-timeout", "1s")
	if res.err == nil {
		t.Fatalf("list against a closed port succeeded: %q", res.stdout)
	}
}

func TestTopicDescriptionFormat(t *testing.T) {
	d := kadm.TopicDetail{
		Topic: "events",
		Partitions: kadm.PartitionDetails{
			1: {Topic: "events", Partition: 1, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
			0: {Topic: "events", Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		},
	}
	configs := []kadm.Config{
		{Key: "segment.bytes", Value: kadm.StringPtr("1048576"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "cleanup.policy", Value: kadm.StringPtr("delete"), Source: kmsg.ConfigSourceDynamicTopicConfig},
	}
	var out bytes.Buffer
	writeTopicDescription(&out, d, configs)
	want := "Topic: events\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: cleanup.policy=delete,segment.bytes=1048576\n" +
		"\tTopic: events\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n" +
		"\tTopic: events\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\n"
	if out.String() != want {
		t.Fatalf("describe printed\n%q\nwant\n%q", out.String(), want)
	}
}

func TestParseConfigs(t *testing.T) {
	got, err := parseConfigs([]string{"retention.ms=1000", "cleanup.policy=compact", "empty="})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "empty": ""}
	if len(got) != len(want) {
		t.Fatalf("parsed %d configs, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] == nil || *got[k] != v {
			t.Errorf("config %s = %v, want %q", k, got[k], v)
		}
	}
}

func TestTopicsAlterPartitions(t *testing.T) {
	bs := brokertest.New(t).Addr()
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "grow", "--partitions", "2")
	res := mustRun(t, "", "topics", "alter", "--bootstrap", bs, "--topic", "grow", "--partitions", "5")
	if res.stdout != "Topic grow now has 5 partitions.\n" {
		t.Fatalf("alter printed %q", res.stdout)
	}
	res = mustRun(t, "", "topics", "describe", "--bootstrap", bs, "--topic", "grow")
	if !strings.HasPrefix(res.stdout, "Topic: grow\tPartitionCount: 5\t") || !strings.Contains(res.stdout, "\tPartition: 4\tLeader: 1\t") {
		t.Fatalf("describe after alter printed\n%s", res.stdout)
	}
	res = runCLI(t, 30*time.Second, "", "topics", "alter", "--bootstrap", bs, "--topic", "grow", "--partitions", "3")
	if res.err == nil || !strings.Contains(res.err.Error(), "INVALID_PARTITIONS") {
		t.Fatalf("shrinking: err %v, want INVALID_PARTITIONS", res.err)
	}
	res = runCLI(t, 30*time.Second, "", "topics", "alter", "--bootstrap", bs, "--topic", "grow")
	if res.err == nil || !strings.Contains(res.err.Error(), "--partitions") {
		t.Fatalf("alter without --partitions: err %v", res.err)
	}
}

func TestTopicsDeleteRecords(t *testing.T) {
	bs := brokertest.New(t).Addr()
	mustRun(t, "", "topics", "create", "--bootstrap", bs, "--topic", "dr", "--partitions", "2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dr", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res := mustRun(t, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "dr", "--partition", "0", "--offset", "4")
	if res.stdout != "Partition dr-0: low watermark 4\n" {
		t.Fatalf("delete-records printed %q", res.stdout)
	}
	res = mustRun(t, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "dr", "--offset", "-1")
	if res.stdout != "Partition dr-0: low watermark 10\nPartition dr-1: low watermark 10\n" {
		t.Fatalf("delete-records of every partition to the high watermark printed %q", res.stdout)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset != 10 {
			t.Errorf("partition %d starts at %d, want 10", o.Partition, o.Offset)
		}
	})
	res = runCLI(t, 30*time.Second, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "dr", "--offset", "11")
	if res.err == nil || !strings.Contains(res.err.Error(), "OFFSET_OUT_OF_RANGE") {
		t.Fatalf("past the high watermark: err %v", res.err)
	}
	res = runCLI(t, 30*time.Second, "", "topics", "delete-records", "--bootstrap", bs, "--topic", "dr")
	if res.err == nil || !strings.Contains(res.err.Error(), "--offset") {
		t.Fatalf("without --offset: err %v", res.err)
	}
}
