package broker

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// zkToolSession opens a session on the chroot for writing nodes the way
// Kafka's own tools do.
func zkToolSession(t *testing.T, ctx context.Context, connect string) coord.Session {
	t.Helper()
	s, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func zkWrite(t *testing.T, ctx context.Context, s coord.Session, path, data string) {
	t.Helper()
	if _, err := s.CreateAll(ctx, path, []byte(data), coord.Persistent); err == nil {
		return
	} else if !errors.Is(err, coord.ErrNodeExists) {
		t.Fatalf("create %s: %v", path, err)
	}
	if _, err := s.Set(ctx, path, []byte(data), coord.AnyVersion); err != nil {
		t.Fatalf("set %s: %v", path, err)
	}
}

// zkTopicNode reads /brokers/topics/<topic> as Kafka's readers do.
type zkTopicNode struct {
	Version    int                `json:"version"`
	Partitions map[string][]int32 `json:"partitions"`
	TopicID    string             `json:"topic_id"`
}

func readZKTopic(t *testing.T, ctx context.Context, s coord.Session, topic string) (zkTopicNode, string) {
	t.Helper()
	data, _, err := s.Get(ctx, "/brokers/topics/"+topic)
	if err != nil {
		t.Fatal(err)
	}
	var r zkTopicNode
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("topic node %s: %v", data, err)
	}
	cfg, _, err := s.Get(ctx, "/config/topics/"+topic)
	if err != nil {
		t.Fatal(err)
	}
	return r, string(cfg)
}

// TestTopicIDMigrationOverZooKeeper: a topic written by an earlier version
// (version 1 topic node, id in the config node) is migrated by the
// controller to Kafka 2.8's layout with the same id, which the partition
// directories keep; a topic written by Kafka's TopicCommand --zookeeper
// (no id) gets one and is served; an alter written the way Kafka 2.8's
// ConfigCommand --zookeeper writes it (the config node, then a
// /config/changes notification) reaches the brokers.
func TestTopicIDMigrationOverZooKeeper(t *testing.T) {
	connect := zkTestChroot(t)
	ctx := testenv.Context(t, 2*time.Minute)
	tool := zkToolSession(t, ctx, connect)
	const oldID = "RDoKZ8zTRqWx3s8oU6c4aA"
	zkWrite(t, ctx, tool, "/brokers/topics/legacy", `{"version":1,"partitions":{"0":[1],"1":[2]}}`)
	zkWrite(t, ctx, tool, "/config/topics/legacy",
		`{"version":1,"config":{"retention.ms":"3600000","tributary.topic.id":"`+oldID+`"}}`)

	zk := func(id int32) func(*config.Config) {
		return func(c *config.Config) {
			c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = id, connect, 6*time.Second
		}
	}
	b1 := newTestBroker(t, zk(1))
	b2 := newTestBroker(t, zk(2))
	brokers := []*testBroker{b1, b2}

	testenv.WaitFor(t, time.Minute, "legacy migrated", func() (bool, string) {
		r, _ := readZKTopic(t, ctx, tool, "legacy")
		return r.TopicID == oldID, ""
	})
	r, cfg := readZKTopic(t, ctx, tool, "legacy")
	if r.Version != 3 || len(r.Partitions) != 2 || cfg != `{"version":1,"config":{"retention.ms":"3600000"}}` {
		t.Fatalf("after migration: topic node %+v, config node %s", r, cfg)
	}
	for i, b := range brokers {
		if err := b.awaitServed(ctx, b.topicReady("legacy")); err != nil {
			t.Fatal(err)
		}
		p := b.partitions.Leader("legacy", int32(i))
		if p == nil {
			t.Fatalf("broker %d does not serve legacy/%d", b.cfg.BrokerID, i)
		}
		if onDisk, err := readPartitionTopicID(p.Dir()); err != nil || onDisk != oldID {
			t.Errorf("broker %d: %s records %q (%v), want the migrated id %s", b.cfg.BrokerID, partitionMetadataFile, onDisk, err, oldID)
		}
		if got := b.metadata().Topics["legacy"]; got.ID != oldID || !maps.Equal(got.Configs, map[string]string{"retention.ms": "3600000"}) {
			t.Errorf("broker %d: metadata id %q configs %v", b.cfg.BrokerID, got.ID, got.Configs)
		}
	}

	// Kafka 2.8's TopicCommand --zookeeper --create: the config node, then
	// a version 3 topic node without an id.
	zkWrite(t, ctx, tool, "/config/topics/bykafka", `{"version":1,"config":{"segment.bytes":"1048576"}}`)
	zkWrite(t, ctx, tool, "/brokers/topics/bykafka",
		`{"version":3,"partitions":{"0":[2],"1":[1]},"adding_replicas":{},"removing_replicas":{}}`)
	testenv.WaitFor(t, time.Minute, "bykafka got an id", func() (bool, string) {
		r, _ := readZKTopic(t, ctx, tool, "bykafka")
		return cluster.ValidTopicID(r.TopicID), ""
	})
	r, cfg = readZKTopic(t, ctx, tool, "bykafka")
	if cfg != `{"version":1,"config":{"segment.bytes":"1048576"}}` {
		t.Errorf("bykafka config node %s", cfg)
	}
	for _, b := range brokers {
		if err := b.awaitServed(ctx, b.topicReady("bykafka")); err != nil {
			t.Fatal(err)
		}
		p := b.partitions.Leader("bykafka", 2-b.cfg.BrokerID)
		if onDisk, err := readPartitionTopicID(p.Dir()); err != nil || onDisk != r.TopicID {
			t.Errorf("broker %d: bykafka %s records %q (%v), want %s", b.cfg.BrokerID, partitionMetadataFile, onDisk, err, r.TopicID)
		}
		if p.Settings().SegmentBytes != 1048576 {
			t.Errorf("broker %d: bykafka segment.bytes %d", b.cfg.BrokerID, p.Settings().SegmentBytes)
		}
	}
	cl := newClient(t, b1.Addr(), kgo.SeedBrokers(b1.Addr(), b2.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, ctx, cl, "bykafka", 0, "k0")
	produceValues(t, ctx, cl, "bykafka", 1, "k1")
	if got := consumeValues(t, ctx, b2.Addr(), "bykafka", 2); len(got[0]) != 1 || got[0][0] != "k0" || len(got[1]) != 1 || got[1][0] != "k1" {
		t.Errorf("bykafka consumed %v", got)
	}

	// Kafka 2.8's ConfigCommand --zookeeper --alter --add-config
	// retention.ms=7200000: the whole config node rewritten, then a
	// sequential change notification.
	zkWrite(t, ctx, tool, "/config/topics/legacy", `{"version":1,"config":{"retention.ms":"7200000"}}`)
	if _, err := tool.CreateAll(ctx, "/config/changes/config_change_", []byte(`{"version":2,"entity_path":"topics/legacy"}`),
		coord.PersistentSequential); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b2.Addr()))
	testenv.WaitFor(t, time.Minute, "retention.ms applied by both brokers and described", func() (bool, string) {
		for i, b := range brokers {
			if p := b.partitions.Leader("legacy", int32(i)); p == nil || p.Settings().Retention != 2*time.Hour {
				return false, ""
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, "legacy")
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			return false, ""
		}
		for _, c := range rcs[0].Configs {
			if c.Key == "retention.ms" {
				return c.MaybeValue() == "7200000", ""
			}
		}
		return false, ""
	})
	if got := b1.metadata().Topics["legacy"].ID; got != oldID {
		t.Errorf("the alter changed the topic id to %q", got)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		if strings.Contains(c.Key, "topic.id") {
			t.Errorf("DescribeConfigs lists %s", c.Key)
		}
	}
	testenv.WaitFor(t, time.Minute, topicConfigFile+" follows the alter", func() (bool, string) {
		got, err := readTopicConfigFile(b1.partitions.Leader("legacy", 0).Dir())
		return err == nil && maps.Equal(got, map[string]string{"retention.ms": "7200000"}), ""
	})
}
