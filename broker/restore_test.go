package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// devCluster is brokers 1..len(dirs) of one process on a fresh in-process
// coordinator, started as tributary dev starts them: producer ids seeded,
// then the brokers started, then the topics on disk restored.
type devCluster struct {
	brokers []*Broker
}

func newDevCluster(t *testing.T, dirs []string) *devCluster {
	t.Helper()
	srv := memcoord.NewServer()
	connect := WithCoordinator(func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil })
	ctx := testenv.Context(t, time.Minute)
	c := &devCluster{}
	for i, dir := range dirs {
		id := int32(i + 1)
		cfg := config.Config{
			BrokerID:               id,
			Listeners:              "PLAINTEXT://127.0.0.1:0",
			LogDirs:                []string{dir},
			RetentionCheckInterval: time.Hour,
		}
		logger := testenv.Logger(t, slog.LevelWarn)
		b, err := New(cfg, logger.With("broker", id), nil, connect)
		if err != nil {
			t.Fatalf("New broker %d: %v", id, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		c.brokers = append(c.brokers, b)
	}
	if err := SeedProducerIDs(ctx, c.brokers...); err != nil {
		t.Fatalf("SeedProducerIDs: %v", err)
	}
	for _, b := range c.brokers {
		if err := b.Start(context.Background()); err != nil {
			t.Fatalf("Start broker %d: %v", b.cfg.BrokerID, err)
		}
	}
	if err := RestoreTopics(ctx, c.brokers...); err != nil {
		t.Fatalf("RestoreTopics: %v", err)
	}
	return c
}

func (c *devCluster) close(t *testing.T) {
	t.Helper()
	for _, b := range slices.Backward(c.brokers) {
		if err := b.Close(); err != nil {
			t.Errorf("close broker %d: %v", b.cfg.BrokerID, err)
		}
	}
}

func (c *devCluster) addrs() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.Addr()
	}
	return out
}

// initProducerID asks b for a producer id over the wire.
func initProducerID(t *testing.T, b *Broker) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	resp := dialRaw(t, b.Addr()).roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 {
		t.Fatalf("InitProducerId on broker %d: error %d, id %d", b.cfg.BrokerID, resp.ErrorCode, resp.ProducerID)
	}
	return resp.ProducerID
}

// TestRestoreTopicsWhereDataLies: a topic written by two brokers comes back
// on three brokers with each partition on the broker holding its data (not
// where the round-robin over three would put it), with its topic id,
// overrides and records; a partition directory lost on every broker comes
// back empty. Producer ids issued before the restart, by any broker, are
// never issued again.
func TestRestoreTopicsWhereDataLies(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ctx := testenv.Context(t, 2*time.Minute)
	const topic, perPartition = "kept", 5

	before := newDevCluster(t, dirs[:2])
	b1, b2 := before.brokers[0], before.brokers[1]
	if err := b1.CreateTopicWithConfigs(ctx, topic, 4, map[string]string{"retention.ms": "86400000"}); err != nil {
		t.Fatal(err)
	}
	if err := b2.awaitServed(ctx, b2.topicReady(topic)); err != nil {
		t.Fatal(err)
	}
	topicID := b1.Member().Metadata().Topics[topic].ID
	cl := newClient(t, b1.Addr(), kgo.SeedBrokers(before.addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// An idempotent client would take a producer id from either broker
		// and change which block each one holds.
		kgo.DisableIdempotentWrite())
	for p := range int32(4) {
		for i := range perPartition {
			rec := &kgo.Record{Topic: topic, Partition: p, Key: []byte{byte(i)}, Value: fmt.Appendf(nil, "p%d-%d", p, i)}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatalf("produce to %d: %v", p, err)
			}
		}
	}
	cl.Close()
	// Broker 1 reserves the first block, broker 2 the next: after a restart
	// broker 1 alone would start its next block where broker 2's began.
	issued := map[int64]bool{initProducerID(t, b1): true, initProducerID(t, b2): true}
	before.close(t)
	if err := os.RemoveAll(filepath.Join(dirs[1], partitionDirName(topic, 1))); err != nil {
		t.Fatal(err)
	}

	after := newDevCluster(t, dirs)
	for _, b := range after.brokers {
		id := initProducerID(t, b)
		if issued[id] {
			t.Fatalf("broker %d issued producer id %d again after the restart (issued before: %v)", b.cfg.BrokerID, id, issued)
		}
		issued[id] = true
	}
	tp := after.brokers[2].Member().Metadata().Topics[topic]
	var replicas [][]int32
	for _, p := range tp.Partitions {
		replicas = append(replicas, p.Replicas)
	}
	if want := [][]int32{{1}, {2}, {1}, {2}}; !slices.EqualFunc(replicas, want, slices.Equal) {
		t.Fatalf("restored assignment %v, want %v (where the data lies)", replicas, want)
	}
	if got := tp.ID; got != topicID || topicID == "" || !maps.Equal(tp.Configs, map[string]string{"retention.ms": "86400000"}) {
		t.Fatalf("restored configs %v, want topic id %s and retention.ms 86400000", tp.Configs, topicID)
	}

	adm := kadm.NewClient(newClient(t, after.brokers[0].Addr(), kgo.SeedBrokers(after.addrs()...)))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		want := int64(perPartition)
		if p == 1 {
			want = 0
		}
		if o, ok := ends.Lookup(topic, p); !ok || o.Err != nil || o.Offset != want {
			t.Fatalf("partition %d end offset %+v, want %d", p, o, want)
		}
	}
	consumer := newClient(t, after.brokers[0].Addr(), kgo.SeedBrokers(after.addrs()...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := map[int32]int{}
	for seen := 0; seen < 3*perPartition; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", seen, 3*perPartition, ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			want := fmt.Sprintf("p%d-%d", r.Partition, next[r.Partition])
			if string(r.Value) != want || r.Offset != int64(next[r.Partition]) {
				t.Fatalf("partition %d offset %d: %q, want %q at offset %d", r.Partition, r.Offset, r.Value, want, next[r.Partition])
			}
			next[r.Partition]++
			seen++
		})
	}
}

// TestProducerIDsSurviveSingleNodeRestart: a broker on its own in-process
// coordinator never issues an id again after a restart.
func TestProducerIDsSurviveSingleNodeRestart(t *testing.T) {
	b := newTestBroker(t, nil)
	first := initProducerID(t, b.Broker)
	second := initProducerID(t, b.Broker)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	again := startTestBroker(t, b.cfg)
	third := initProducerID(t, again.Broker)
	if first == second || third == first || third == second || third < second {
		t.Fatalf("producer ids %d, %d before the restart and %d after: want distinct, increasing", first, second, third)
	}
}

// TestStandaloneKeepsCoordinationAcrossRestart: a broker without
// zookeeper.connect keeps its in-process coordination in the first log dir,
// so what Kafka keeps in ZooKeeper survives a restart as it would there:
// SCRAM credentials, topic config overrides and client quotas (they were
// lost: the tree was in memory). A second broker on the same log dir is
// refused while the first runs.
func TestStandaloneKeepsCoordinationAcrossRestart(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopic(ctx, "keep", 2); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "secret"}}); err != nil {
		t.Fatalf("AlterUserSCRAMs: %v", err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, "keep"); err != nil {
		t.Fatalf("AlterTopicConfigs: %v", err)
	}
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("app")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}},
	}}); err != nil {
		t.Fatalf("AlterClientQuotas: %v", err)
	}

	cfg := b.cfg
	if _, err := New(cfg, nil, nil); !errors.Is(err, memcoord.ErrLocked) {
		t.Fatalf("a second broker on the same log dir: err %v, want memcoord.ErrLocked", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.LogDirs[0], CoordinationDir)); err != nil {
		t.Fatalf("no coordination directory in the log dir: %v", err)
	}

	b2 := startTestBroker(t, cfg)
	adm2 := kadm.NewClient(newClient(t, b2.Addr()))
	users, err := adm2.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("DescribeUserSCRAMs: %v", err)
	}
	if u, ok := users["alice"]; !ok || len(u.CredInfos) != 1 || u.CredInfos[0].Mechanism != kadm.ScramSha256 || u.CredInfos[0].Iterations != 4096 {
		t.Fatalf("SCRAM users after restart: %+v", users)
	}
	rcs, err := adm2.DescribeTopicConfigs(ctx, "keep")
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On("keep", nil)
	if err != nil {
		t.Fatal(err)
	}
	var retention string
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			retention = c.MaybeValue()
		}
	}
	if retention != "3600000" {
		t.Fatalf("retention.ms override after restart: %q, want 3600000", retention)
	}
	quotas, err := adm2.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatalf("DescribeClientQuotas: %v", err)
	}
	var rate float64
	for _, q := range quotas {
		for _, v := range q.Values {
			if v.Key == "producer_byte_rate" {
				rate = v.Value
			}
		}
	}
	if rate != 1048576 {
		t.Fatalf("client quotas after restart: %+v", quotas)
	}
	if got := b2.Topics(); got["keep"] != 2 {
		t.Fatalf("topics after restart: %v", got)
	}
}
