package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestConsumerGroupJavaConsumer: Kafka 3.9's Java consumer with
// group.protocol=consumer (its KIP-848 consumer) reads a topic in a group
// and commits; Kafka's kafka-consumer-groups --describe shows the group's
// offsets at the end, and, while a second Java consumer is in the group,
// the member with every partition.
func TestConsumerGroupJavaConsumer(t *testing.T) {
	tools := testenv.Kafka39Tools(t)
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.ConsumerHeartbeatInterval = 500 * time.Millisecond
		c.Groups.ConsumerSessionTimeout = 10 * time.Second
	})
	ctx := testenv.Context(t, 3*time.Minute)
	const parts, n, topic, group = 3, 30, "java848", "java848-g"
	if err := b.CreateTopic(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	produceTestRecords(t, ctx, b.Addr(), topic, n, parts)
	consumer := func(extra ...string) []string {
		return append([]string{"--bootstrap-server", b.Addr(), "--topic", topic, "--group", group,
			"--consumer-property", "group.protocol=consumer", "--from-beginning"}, extra...)
	}

	cmd := tools.Command(ctx, "org.apache.kafka.tools.consumer.ConsoleConsumer", consumer("--max-messages", strconv.Itoa(n), "--timeout-ms", "60000")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("console consumer: %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(stdout.String())
	if len(lines) != n {
		t.Fatalf("the Java consumer read %d records, want %d:\n%s\n%s", len(lines), n, stdout.String(), stderr.String())
	}

	describe := func(args ...string) string {
		t.Helper()
		cmd := tools.Command(ctx, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			append([]string{"--bootstrap-server", b.Addr(), "--describe", "--group", group}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kafka-consumer-groups --describe: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
	offsets := func(out string) string {
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) >= 6 && f[0] == group && f[1] == topic {
				rows = append(rows, strings.Join(f[2:6], " "))
			}
		}
		sort.Strings(rows)
		return strings.Join(rows, "; ")
	}
	var want []string
	for p := range parts {
		want = append(want, fmt.Sprintf("%d %d %d 0", p, n/parts, n/parts))
	}
	if got := offsets(describe()); got != strings.Join(want, "; ") {
		t.Fatalf("described offsets %q, want %q", got, strings.Join(want, "; "))
	}

	// A member in the group: --members shows it with every partition.
	bg := tools.Command(ctx, "org.apache.kafka.tools.consumer.ConsoleConsumer", consumer()...)
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bg.Process.Kill(); _ = bg.Wait() }()
	admin := newClient(t, b.Addr())
	var out string
	testenv.WaitFor(t, 90*time.Second, "the Java member in the described group", func() (bool, string) {
		desc := describeGroup848(t, admin, group)
		if desc == "" {
			return false, "no member yet"
		}
		out = describe("--members", "--verbose")
		return strings.Contains(out, "#PARTITIONS") && memberRow(out, group, parts) && desc == "Stable", out
	})
	t.Logf("kafka-consumer-groups --describe --members --verbose:\n%s", out)
}

// memberRow reports a member row of --describe --members --verbose
// (GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT) holding all
// partitions partitions. Kafka 3.9's tool prints the assignment of a
// consumer-protocol member as "(0,1,2)", without the topic name that the
// ConsumerGroupDescribe response carries.
func memberRow(out, group string, partitions int) bool {
	var all []string
	for p := range partitions {
		all = append(all, strconv.Itoa(p))
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && f[0] == group && f[4] == strconv.Itoa(partitions) && strings.HasSuffix(f[5], "("+strings.Join(all, ",")+")") {
			return true
		}
	}
	return false
}

// describeGroup848 is the group's ConsumerGroupDescribe state, "" when
// it has no member.
func describeGroup848(t *testing.T, cl *kgo.Client, group string) string {
	t.Helper()
	g := kafkatest.DescribeConsumerGroup(t, context.Background(), cl, group)
	if g.ErrorCode != 0 || len(g.Members) == 0 {
		return ""
	}
	return g.State
}

// TestConsumerGroupJavaKill9: three Java consumers (group.protocol=
// consumer) under produce load, one killed with SIGKILL and one added:
// every record is printed by some member at least once and the group's
// committed offsets end exactly at the partitions' ends; the group is
// Stable with every partition assigned once after each change.
func TestConsumerGroupJavaKill9(t *testing.T) {
	t.Parallel() // mostly JVM start-ups and session timeouts: beside the other slow broker tests
	tools := testenv.Kafka39Tools(t)
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.ConsumerHeartbeatInterval = 500 * time.Millisecond
		c.Groups.ConsumerSessionTimeout = 6 * time.Second
	})
	ctx := testenv.Context(t, 3*time.Minute)
	const parts, total, topic, group = 6, 3000, "java848k", "java848k-g"
	if err := b.CreateTopic(ctx, topic, parts); err != nil {
		t.Fatal(err)
	}
	p := kafkatest.NewProcessed()
	admin := newClient(t, b.Addr())
	start := func() *exec.Cmd {
		t.Helper()
		cmd := tools.Command(ctx, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", b.Addr(),
			"--topic", topic, "--group", group, "--from-beginning",
			"--consumer-property", "group.protocol=consumer", "--consumer-property", "auto.commit.interval.ms=500")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
				if err != nil {
					t.Errorf("a Java consumer printed %q", sc.Text())
					continue
				}
				p.Add(n)
			}
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	var members []*exec.Cmd
	for range 3 {
		members = append(members, start())
	}
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)

	produced := make(chan error, 1)
	go func() {
		produced <- kafkatest.ProduceNumbered(ctx, newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, parts, total)
	}()
	time.Sleep(time.Second) // some records in flight when the member dies
	if err := members[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 2, parts)
	start()
	kafkatest.AwaitConsumerGroup(t, ctx, admin, group, 3, parts)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	kafkatest.AwaitProcessedAndCommitted(t, ctx, admin, group, topic, p, total)
}
