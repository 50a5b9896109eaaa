package kafkacompat

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// configsExtra makes retention observable within seconds: small segments,
// retention checked every 200 ms, and leadership left where it is (which
// replica follows which leader decides what a broker's retention moves).
var configsExtra = map[string]string{
	"log.segment.bytes":               "16384",
	"log.retention.check.interval.ms": "200",
	"auto.leader.rebalance.enable":    "false",
}

// configsTopicPartitions is the partition count of the topics the broker
// config tests write: with RF 3 every broker holds every partition.
const configsTopicPartitions = 3

// createSegmented creates topic (RF 3) and writes several segments to
// every partition; it returns once every replica holds at least three
// segments.
func createSegmented(t *testing.T, ctx context.Context, c *cluster, topic string) {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	if resp, err := adm.CreateTopic(ctx, configsTopicPartitions, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	testenv.WaitFor(t, waitTimeout, topic+" led", func() (bool, string) {
		td := c.topicFrom(t, ctx, topic)
		return td.Err == nil && len(td.Partitions) == configsTopicPartitions && td.Partitions[0].Leader >= 0, ""
	})
	produceRounds(t, ctx, c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression())), topic, configsTopicPartitions, 6, 100)
	testenv.WaitFor(t, waitTimeout, "three segments or more on every replica of "+topic, func() (bool, string) {
		for _, id := range c.Live() {
			for p := 0; p < configsTopicPartitions; p++ {
				logs, _ := filepath.Glob(filepath.Join(c.LogDir(id), fmt.Sprintf("%s-%d", topic, p), "*.log"))
				if len(logs) < 3 {
					return false, fmt.Sprintf("broker %d partition %d: %d segments", id, p, len(logs))
				}
			}
		}
		return true, ""
	})
}

// leadersOf maps each partition of topic to its leader.
func leadersOf(t *testing.T, ctx context.Context, c *cluster, topic string) map[int32]int32 {
	t.Helper()
	out := map[int32]int32{}
	for p, d := range c.topicFrom(t, ctx, topic).Partitions {
		out[p] = d.Leader
	}
	return out
}

// retentionExpectation says, for the replica of partition p on broker id,
// whether retention must have moved its log start (+1), must not have (0),
// or may have either way (-1: it follows a leader's log start).
type retentionExpectation func(id, p int32) int

// awaitRetention waits until every replica that must have deleted segments
// starts past offset 0, then checks that those that must not still start
// at 0. Each replica answers for itself (ListOffsets earliest from
// Kafka's debugging replica id).
func awaitRetention(t *testing.T, ctx context.Context, c *cluster, topic string, want retentionExpectation) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, "retention on the replicas that must apply it", func() (bool, string) {
		for _, id := range c.Live() {
			addr := c.Addr(id)
			for p := int32(0); p < configsTopicPartitions; p++ {
				if want(id, p) == 1 && earliestOn(ctx, addr, id, topic, p) <= 0 {
					return false, fmt.Sprintf("broker %d's replica of partition %d still starts at 0", id, p)
				}
			}
		}
		return true, ""
	})
	for _, id := range c.Live() {
		addr := c.Addr(id)
		for p := int32(0); p < configsTopicPartitions; p++ {
			if want(id, p) == 0 {
				if got := earliestOn(ctx, addr, id, topic, p); got != 0 {
					t.Fatalf("broker %d's replica of %s-%d starts at %d: a config not meant for it deleted segments", id, topic, p, got)
				}
			}
		}
	}
}

// awaitBrokerConfig waits until broker id reports config name with value
// from source.
func awaitBrokerConfig(t *testing.T, ctx context.Context, c *cluster, id int32, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d reporting %s=%s (%v)", id, name, value, source), func() (bool, string) {
		v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, name)
		return err == nil && v == value && src == source, fmt.Sprintf("%s (%v), err %v", v, src, err)
	})
}

// TestKafka39ConfigsBrokers runs Kafka 3.9's kafka-configs
// --bootstrap-server on the brokers entity: a per-broker log.retention.ms
// deletes old segments on that broker only, --describe shows it with its
// synonyms, --delete-config removes it, the --entity-default value reaches
// every broker, all without a restart; unknown and read-only keys fail the
// tool with Kafka's InvalidConfigurationException.
func TestKafka39ConfigsBrokers(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka39Tools(t)
	c := startClusterWith(t, 3, configsExtra)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const class, topic = "kafka.admin.ConfigCommand", "compat-brokerconfigs"
	configs := func(args ...string) string {
		t.Helper()
		return mustRun(t, ctx, tools, class, append([]string{"--bootstrap-server", c.live(), "--entity-type", "brokers"}, args...)...)
	}
	for _, bad := range []string{"no.such.config=1", "broker.id=7", "log.dirs=elsewhere"} {
		stdout, stderr, err := runTool(t, ctx, tools, "", class, "--bootstrap-server", c.live(), "--entity-type", "brokers",
			"--entity-default", "--alter", "--add-config", bad)
		if err == nil || !strings.Contains(stdout+stderr, "InvalidConfigurationException") {
			t.Fatalf("kafka-configs --add-config %s: %s, want InvalidConfigurationException\nstdout:\n%s\nstderr:\n%s", bad, exitStatus(err), stdout, stderr)
		}
	}
	if out := configs("--entity-default", "--describe"); strings.Contains(out, "=") {
		t.Fatalf("rejected alterations left default configs:\n%s", out)
	}

	createSegmented(t, ctx, c, topic)
	leaders := leadersOf(t, ctx, c, topic)
	if !slices.ContainsFunc(slices.Collect(maps.Values(leaders)), func(l int32) bool { return l != 1 }) {
		t.Fatalf("broker 1 leads every partition (%v): nothing would show its config is its own", leaders)
	}

	// Broker 1's own value: its replicas drop old segments; the replicas
	// of brokers 2 and 3 of partitions they lead keep theirs.
	out := configs("--entity-name", "1", "--alter", "--add-config", "log.retention.ms=1000")
	t.Logf("--entity-name 1 --alter:\n%s", out)
	awaitBrokerConfig(t, ctx, c, 1, "log.retention.ms", "1000", kmsg.ConfigSourceDynamicBrokerConfig)
	awaitRetention(t, ctx, c, topic, func(id, p int32) int {
		switch {
		case id == 1:
			return 1
		case leaders[p] == 1:
			return -1
		}
		return 0
	})
	out = configs("--entity-name", "1", "--describe")
	if want := "log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=1000"; !strings.Contains(out, want) {
		t.Fatalf("--entity-name 1 --describe does not show %q:\n%s", want, out)
	}
	t.Logf("--entity-name 1 --describe:\n%s", out)
	for _, id := range []int32{2, 3} {
		if v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, "log.retention.ms"); err != nil || src == kmsg.ConfigSourceDynamicBrokerConfig {
			t.Fatalf("broker %d reports log.retention.ms=%s (%v, %v) after broker 1's override", id, v, src, err)
		}
	}

	configs("--entity-name", "1", "--alter", "--delete-config", "log.retention.ms")
	testenv.WaitFor(t, waitTimeout, "broker 1 back on its static log.retention.ms", func() (bool, string) {
		v, src, err := describeBrokerConfig(ctx, c.Addr(1), 1, "log.retention.ms")
		return err == nil && src != kmsg.ConfigSourceDynamicBrokerConfig, fmt.Sprintf("%s (%v) %v", v, src, err)
	})
	if out := configs("--entity-name", "1", "--describe"); strings.Contains(out, "log.retention.ms") {
		t.Fatalf("--delete-config left log.retention.ms:\n%s", out)
	}

	// The cluster-wide default: every replica drops its old segments.
	configs("--entity-default", "--alter", "--add-config", "log.retention.ms=1000")
	for id := int32(1); id <= 3; id++ {
		awaitBrokerConfig(t, ctx, c, id, "log.retention.ms", "1000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	}
	awaitRetention(t, ctx, c, topic, func(id, p int32) int { return 1 })
	out = configs("--entity-default", "--describe")
	if want := "log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}"; !strings.Contains(out, want) {
		t.Fatalf("--entity-default --describe does not show %q:\n%s", want, out)
	}
	t.Logf("--entity-default --describe:\n%s", out)
	configs("--entity-default", "--alter", "--delete-config", "log.retention.ms")
	for id := int32(1); id <= 3; id++ {
		testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %d without the default", id), func() (bool, string) {
			v, src, err := describeBrokerConfig(ctx, c.Addr(id), id, "log.retention.ms")
			return err == nil && src != kmsg.ConfigSourceDynamicDefaultBrokerConfig, fmt.Sprintf("%s (%v) %v", v, src, err)
		})
	}
}

// TestKafka28ConfigsBrokersZooKeeper runs Kafka 2.8's kafka-configs
// --zookeeper on the brokers entity. That form writes /config/brokers/<id>
// (and <default>) and a /config/changes notification itself, and Kafka
// 2.8 allows it only for brokers that are not running (to bootstrap
// configs before a start): the tool must refuse while broker 2 runs, what
// it writes must be byte for byte what our brokers write, a broker started
// after it applies the value, and the tool reads what our brokers wrote.
func TestKafka28ConfigsBrokersZooKeeper(t *testing.T) {
	t.Parallel()
	tools := testenv.Kafka28Tools(t)
	c := startClusterWith(t, 3, configsExtra)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const class, topic = "kafka.admin.ConfigCommand", "compat-zkbrokerconfigs"
	zkConfigs := func(args ...string) (string, string, error) {
		t.Helper()
		return runTool(t, ctx, tools, "", class, append([]string{"--zookeeper", c.Connect(), "--entity-type", "brokers"}, args...)...)
	}
	mustZK := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := zkConfigs(args...)
		if err != nil {
			t.Fatalf("kafka-configs --zookeeper %s failed (%s)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), exitStatus(err), stdout, stderr)
		}
		return stdout
	}
	zk, err := zkcoord.Connect(ctx, c.Connect(), zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	defer zk.Close()
	node := func(path string) string {
		t.Helper()
		data, _, err := zk.Get(ctx, path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		return string(data)
	}
	lastChange := func() string {
		t.Helper()
		kids, _, err := zk.Children(ctx, "/config/changes")
		if err != nil || len(kids) == 0 {
			t.Fatalf("/config/changes: %v %v", kids, err)
		}
		return node("/config/changes/" + slices.Max(kids))
	}

	createSegmented(t, ctx, c, topic)

	// Our brokers write broker 3's value; Kafka's tool reads it.
	res, err := kadm.NewClient(c.client(t)).AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kadm.StringPtr("3600000")}}, 3)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("AlterConfigs on broker 3: %v", err)
	}
	ours, oursChange := node("/config/brokers/3"), lastChange()
	if out := mustZK("--entity-name", "3", "--describe"); !strings.Contains(out, "log.retention.ms=3600000") {
		t.Fatalf("kafka-configs --zookeeper --describe does not show what our broker wrote (%s):\n%s", ours, out)
	}

	stdout, stderr, err := zkConfigs("--entity-name", "2", "--alter", "--add-config", "log.retention.ms=1000")
	if err == nil {
		t.Fatalf("Kafka 2.8's kafka-configs --zookeeper altered running broker 2's configs; it refuses that in Kafka\nstdout:\n%s", stdout)
	}
	t.Logf("refused while broker 2 runs (%s): %s", exitStatus(err), problemLines(stdout+stderr))
	if _, _, err := zk.Get(ctx, "/config/brokers/2"); err == nil {
		t.Fatalf("the refused alteration wrote /config/brokers/2: %s", node("/config/brokers/2"))
	}

	c.Stop(t, 2)
	mustZK("--entity-name", "2", "--alter", "--add-config", "log.retention.ms=1000")
	theirs, theirsChange := node("/config/brokers/2"), lastChange()
	if want := strings.Replace(ours, "3600000", "1000", 1); theirs != want {
		t.Fatalf("Kafka's tool wrote /config/brokers/2 = %s; our brokers write %s for the same change", theirs, want)
	}
	if want := strings.Replace(oursChange, "brokers/3", "brokers/2", 1); theirsChange != want {
		t.Fatalf("Kafka's tool wrote the notification %s; our brokers write %s for the same change", theirsChange, want)
	}
	t.Logf("/config/brokers/2 = %s, notification %s (ours: %s, %s)", theirs, theirsChange, ours, oursChange)
	c.Start(t, 2)
	awaitBrokerConfig(t, ctx, c, 2, "log.retention.ms", "1000", kmsg.ConfigSourceDynamicBrokerConfig)
	leaders := leadersOf(t, ctx, c, topic)
	awaitRetention(t, ctx, c, topic, func(id, p int32) int {
		switch {
		case id == 2:
			return 1
		case leaders[p] == 2:
			return -1
		}
		return 0
	})

	// The default entity: only with no broker running.
	if _, _, err := zkConfigs("--entity-default", "--alter", "--add-config", "log.retention.ms=1000"); err == nil {
		t.Fatalf("Kafka 2.8's kafka-configs --zookeeper altered the default with brokers running")
	}
	for id := int32(1); id <= 3; id++ {
		c.Stop(t, id)
	}
	mustZK("--entity-default", "--alter", "--add-config", "log.retention.ms=1000")
	if got, want := node("/config/brokers/<default>"), strings.Replace(ours, "3600000", "1000", 1); got != want {
		t.Fatalf("Kafka's tool wrote /config/brokers/<default> = %s, want %s", got, want)
	}
	for id := int32(1); id <= 3; id++ {
		c.Start(t, id)
	}
	awaitBrokerConfig(t, ctx, c, 1, "log.retention.ms", "1000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	awaitBrokerConfig(t, ctx, c, 3, "log.retention.ms", "3600000", kmsg.ConfigSourceDynamicBrokerConfig)
	// Broker 3 keeps its own 1 h, but its replicas follow whichever leader
	// the restarts left them: only brokers 1 and 2 are certain.
	awaitRetention(t, ctx, c, topic, func(id, p int32) int {
		if id != 3 {
			return 1
		}
		return -1
	})
}
