package broker

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// produceValues writes one record per value to topic/partition.
func produceValues(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, values ...string) {
	t.Helper()
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %q to %s/%d: %v", v, topic, partition, err)
		}
	}
}

// consumeValues reads every partition of topic from the start until want
// records came, and returns the values by partition.
func consumeValues(t *testing.T, ctx context.Context, addr, topic string, want int) map[int32][]string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", n, want, got)
		}
		for _, err := range fs.Errors() {
			t.Logf("fetch error (retried): %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	return got
}

// TestRecreatedTopicDropsStaleData: a topic deleted while a broker was
// down and re-created under the same name does not serve that broker's old
// data; a plain restart keeps it.
func TestRecreatedTopicDropsStaleData(t *testing.T) {
	srv := memcoord.NewServer()
	connect := WithCoordinator(func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil })
	b1 := newTestBroker(t, func(c *config.Config) { c.BrokerID = 1 }, connect)
	b2 := newTestBroker(t, func(c *config.Config) { c.BrokerID = 2 }, connect)
	ctx := testenv.Context(t, time.Minute)
	restartB2 := func() {
		t.Helper()
		cfg := b2.cfg
		if err := b2.Close(); err != nil {
			t.Fatal(err)
		}
		b2 = startTestBroker(t, cfg, connect)
	}

	if err := b1.CreateTopic(ctx, "re", 2); err != nil {
		t.Fatal(err)
	}
	if err := b2.awaitServed(ctx, b2.topicReady("re")); err != nil {
		t.Fatal(err)
	}
	firstID := b1.metadata().Topics["re"].ID
	dir := b2.partitions.Leader("re", 1).Dir()
	cl := newClient(t, b1.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	produceValues(t, ctx, cl, "re", 0, "old-0")
	produceValues(t, ctx, cl, "re", 1, "old-1a", "old-1b")

	onDisk, err := readPartitionTopicID(dir)
	if err != nil || onDisk != firstID || firstID == "" {
		t.Fatalf("%s records topic id %q (%v), want %q", partitionMetadataFile, onDisk, err, firstID)
	}

	// Same topic: the data stays.
	restartB2()
	if err := b2.awaitServed(ctx, b2.topicReady("re")); err != nil {
		t.Fatal(err)
	}
	if end := b2.partitions.Leader("re", 1).Log().EndOffset(); end != 2 {
		t.Fatalf("after a restart partition 1 ends at %d, want 2", end)
	}

	// Deleted while broker 2 is down, re-created once it is back.
	cfg2 := b2.cfg
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b1.DeleteTopic(ctx, "re"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("broker 2 was down, its data should still be on disk: %v", err)
	}
	b2 = startTestBroker(t, cfg2, connect)
	if _, err := b1.Member().AwaitMetadata(ctx, func(s cluster.Snapshot) bool { return len(s.Brokers) == 2 }); err != nil {
		t.Fatal(err)
	}
	if err := b1.CreateTopic(ctx, "re", 2); err != nil {
		t.Fatal(err)
	}
	if err := b2.awaitServed(ctx, b2.topicReady("re")); err != nil {
		t.Fatal(err)
	}
	secondID := b1.metadata().Topics["re"].ID
	if secondID == firstID {
		t.Fatal("the re-created topic has the old topic id")
	}
	p := b2.partitions.Leader("re", 1)
	if p == nil || p.Log().EndOffset() != 0 {
		t.Fatalf("re-created partition 1 on broker 2: served %v, want empty", p != nil)
	}
	if onDisk, err := readPartitionTopicID(p.Dir()); err != nil || onDisk != secondID {
		t.Fatalf("%s records %q (%v), want the new id %q", partitionMetadataFile, onDisk, err, secondID)
	}
	// A client that held the old topic fails it with UNKNOWN_TOPIC_ID once
	// its metadata shows the new id (franz-go does not adopt a new id, as
	// against Kafka), so the new topic gets a new client.
	cl = newClient(t, b1.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, ctx, cl, "re", 0, "new-0")
	produceValues(t, ctx, cl, "re", 1, "new-1")
	got := consumeValues(t, ctx, b1.Addr(), "re", 2)
	if !slices.Equal(got[0], []string{"new-0"}) || !slices.Equal(got[1], []string{"new-1"}) {
		t.Fatalf("consumed %v, want only the new records", got)
	}
	entries, _ := os.ReadDir(p.Dir())
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			data, _ := os.ReadFile(filepath.Join(p.Dir(), e.Name()))
			if strings.Contains(string(data), "old-1") {
				t.Errorf("%s still holds the old topic's records", e.Name())
			}
		}
	}
}

// TestRestoredIdentity: a topic found on disk keeps the id of its
// partition.metadata and the overrides of its topic.config.json; a legacy
// id key in that file (not a config) is dropped; a directory without a
// valid id yields a new one.
func TestRestoredIdentity(t *testing.T) {
	const id = "RDoKZ8zTRqWx3s8oU6c4aA"
	d0, d1 := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(d0, topicConfigFile),
		[]byte(`{"version":1,"config":{"retention.ms":"5","`+cluster.LegacyTopicIDConfig+`":"`+id+`"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := recordTopicIdentity(d1, id, map[string]string{"retention.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	got, configs, err := restoredIdentity([]string{d0, d1})
	if err != nil || got != id || !maps.Equal(configs, map[string]string{"retention.ms": "5"}) {
		t.Fatalf("restored %q %v, %v; want %s and retention.ms only", got, configs, err, id)
	}
	if err := os.WriteFile(filepath.Join(d1, partitionMetadataFile), []byte("version: 0\ntopic_id: garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err = restoredIdentity([]string{d0, d1})
	if err != nil || got == id || !cluster.ValidTopicID(got) {
		t.Fatalf("without a valid recorded id: %q, %v; want a new valid id", got, err)
	}
}

// TestTopicIDsOnTheWire: CreateTopics v7 and Metadata v10+ carry the id the
// partition directories record, Metadata v12 and DeleteTopics v6 find a
// topic by that id, and an id no topic has gets UNKNOWN_TOPIC_ID.
func TestTopicIDsOnTheWire(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, b.Addr())

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.TimeoutMillis = 30000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "ids", 2, 1
	create.Topics = append(create.Topics, ct)
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil || len(cresp.Topics) != 1 || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics v7: %+v, %v", cresp, err)
	}
	onDisk, err := readPartitionTopicID(b.partitions.Leader("ids", 1).Dir())
	if err != nil || !cluster.ValidTopicID(onDisk) {
		t.Fatalf("%s records %q, %v", partitionMetadataFile, onDisk, err)
	}
	id := wireTopicID(onDisk)
	if cresp.Topics[0].TopicID != id {
		t.Fatalf("CreateTopics v7 topic id %x, the partition records %s (%x)", cresp.Topics[0].TopicID, onDisk, id)
	}

	metadata := func(version int16, topics ...kmsg.MetadataRequestTopic) []kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		req.Topics = topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("Metadata v%d: %v", version, err)
		}
		return resp.Topics
	}
	byName := kmsg.NewMetadataRequestTopic()
	byName.Topic = kmsg.StringPtr("ids")
	for _, v := range []int16{10, 12} {
		got := metadata(v, byName)
		if len(got) != 1 || got[0].ErrorCode != 0 || got[0].TopicID != id || len(got[0].Partitions) != 2 {
			t.Fatalf("Metadata v%d by name: %+v; want topic id %x", v, got, id)
		}
	}
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = id
	got := metadata(12, byID)
	if len(got) != 1 || got[0].ErrorCode != 0 || got[0].Topic == nil || *got[0].Topic != "ids" || len(got[0].Partitions) != 2 {
		t.Fatalf("Metadata v12 by id: %+v; want topic ids", got)
	}
	unknown := kmsg.NewMetadataRequestTopic()
	unknown.TopicID = [16]byte{1, 2, 3}
	if got := metadata(12, unknown); len(got) != 1 || got[0].ErrorCode != kerr.UnknownTopicID.Code || got[0].TopicID != unknown.TopicID {
		t.Fatalf("Metadata v12 by an unknown id: %+v; want UNKNOWN_TOPIC_ID", got)
	}

	del := func(topic *string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = 6
		req.TimeoutMillis = 30000
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic, dt.TopicID = topic, id
		req.Topics = append(req.Topics, dt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("DeleteTopics v6: %+v, %v", resp, err)
		}
		return resp.Topics[0]
	}
	if r := del(nil, unknown.TopicID); r.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("DeleteTopics v6 by an unknown id: %+v; want UNKNOWN_TOPIC_ID", r)
	}
	if r := del(kmsg.StringPtr("ids"), id); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("DeleteTopics v6 by name and id: %+v; want INVALID_REQUEST", r)
	}
	if _, ok := b.metadata().Topics["ids"]; !ok {
		t.Fatal("a refused delete removed the topic")
	}
	if r := del(nil, id); r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "ids" {
		t.Fatalf("DeleteTopics v6 by id: %+v; want topic ids deleted", r)
	}
	if _, ok := b.metadata().Topics["ids"]; ok {
		t.Fatal("topic ids still in this broker's metadata after its deletion by id")
	}
	if got := metadata(12, byID); len(got) != 1 || got[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("Metadata v12 by the deleted topic's id: %+v; want UNKNOWN_TOPIC_ID", got)
	}
}
