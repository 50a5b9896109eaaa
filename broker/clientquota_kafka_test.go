package broker

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/quota"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// runConfigCommand runs Kafka's kafka-configs (ConfigCommand) from tools.
func runConfigCommand(t *testing.T, ctx context.Context, tools testenv.KafkaTools, args ...string) string {
	t.Helper()
	cmd := tools.Command(ctx, "kafka.admin.ConfigCommand", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafka-configs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// awaitQuotas waits until every broker's quota cache satisfies cond.
func awaitQuotas(t *testing.T, ctx context.Context, what string, cond func(map[quota.Entity]quota.Values) bool, brokers ...*testBroker) {
	t.Helper()
	for _, b := range brokers {
		if err := b.ClientQuotas().Await(ctx, cond); err != nil {
			t.Fatalf("broker %d never saw %s: %v (cache %v)", b.cfg.BrokerID, what, err, b.ClientQuotas().Cached())
		}
	}
}

func newZKQuotaBrokers(t *testing.T) (string, *testBroker, *testBroker) {
	t.Helper()
	connect := zkTestChroot(t)
	zk := func(id int32) func(*config.Config) {
		return func(c *config.Config) {
			c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = id, connect, 6*time.Second
		}
	}
	b1, b2 := newTestBroker(t, zk(1)), newTestBroker(t, zk(2))
	ctx := testenv.Context(t, time.Minute)
	if _, err := b1.Member().AwaitMetadata(ctx, func(s cluster.Snapshot) bool { return len(s.Brokers) == 2 }); err != nil {
		t.Fatal(err)
	}
	return connect, b1, b2
}

// throttledResponses sums a quota's throttled responses for a client id
// over brokers.
func throttledResponses(t *testing.T, q, client string, brokers ...*testBroker) float64 {
	t.Helper()
	n := 0.0
	for _, b := range brokers {
		n += counterValue(t, b.reg, "tributary_broker_quota_throttled_responses_total", map[string]string{"quota": q, "client_id": client})
	}
	return n
}

// TestClientQuotasKafka39ConfigCommand: quotas set with Kafka 3.9's
// `kafka-configs --bootstrap-server` on a client id hold that client's
// produce and consume rates, measured at once for a minute, within 10% of
// the quota on two ZooKeeper brokers, while another client is not held
// back; `--describe` shows them, `--entity-default` applies to clients
// without their own, and `--delete-config` lifts the limit at once.
func TestClientQuotasKafka39ConfigCommand(t *testing.T) {
	t.Parallel() // mostly throttled, waiting: beside the other slow broker tests
	tools := testenv.Kafka39Tools(t)
	_, b1, b2 := newZKQuotaBrokers(t)
	ctx := testenv.Context(t, 6*time.Minute)
	bootstrap := b1.Addr()
	configs := func(args ...string) string {
		t.Helper()
		return runConfigCommand(t, ctx, tools, append([]string{"--bootstrap-server", bootstrap}, args...)...)
	}
	const produceQuota, consumeQuota = 1 << 20, 2 << 20
	loader := quota.Entity{Client: quota.Named("loader")}

	admin := newClient(t, bootstrap)
	createTopic(t, ctx, admin, "quota-in", 1)
	createTopic(t, ctx, admin, "quota-fill", 1)

	// Another client fills the topic the loader will consume, unthrottled.
	const fillBytes, recordSize = 24 << 20, 16 << 10
	other := newClient(t, bootstrap, kgo.ClientID("other"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("quota-fill"))
	value := bytes.Repeat([]byte("q"), recordSize)
	start := time.Now()
	produceCopies(t, ctx, other, fillBytes/recordSize, value)
	fillRate := float64(fillBytes) / time.Since(start).Seconds()

	configs("--alter", "--entity-type", "clients", "--entity-name", "loader",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	awaitQuotas(t, ctx, "loader's quotas", func(c map[quota.Entity]quota.Values) bool {
		return c[loader][quota.ProducerByteRate] == produceQuota && c[loader][quota.ConsumerByteRate] == consumeQuota
	}, b1, b2)
	out := configs("--describe", "--entity-type", "clients", "--entity-name", "loader")
	for _, w := range []string{"client-id 'loader'", "producer_byte_rate=1048576", "consumer_byte_rate=2097152"} {
		if !strings.Contains(out, w) {
			t.Errorf("kafka-configs --describe lacks %q:\n%s", w, out)
		}
	}

	// The loader produces and consumes as fast as it can; the rates are
	// measured over a minute after the first window (quota.window.num x
	// quota.window.size.seconds), whose allowance is a burst.
	producer := newClient(t, bootstrap, kgo.ClientID("loader"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DefaultProduceTopic("quota-in"), kgo.MaxBufferedRecords(64))
	consumer := newClient(t, bootstrap, kgo.ClientID("loader"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"quota-fill": {0: kgo.NewOffset().AtStart()}}))
	var produced, consumed atomic.Int64
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for runCtx.Err() == nil {
			producer.Produce(runCtx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					produced.Add(int64(len(r.Value)))
				}
			})
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for runCtx.Err() == nil {
			fs := consumer.PollFetches(runCtx)
			end := false
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				for _, r := range p.Records {
					if !bytes.Equal(r.Value, value) {
						t.Errorf("consumed a record of %d bytes that is not what was written", len(r.Value))
					}
					consumed.Add(int64(len(r.Value)))
					end = end || r.Offset == p.HighWatermark-1
				}
			})
			if end { // read it again
				consumer.SetOffsets(map[string]map[int32]kgo.EpochOffset{"quota-fill": {0: {Epoch: -1, Offset: 0}}})
			}
		}
	}()
	// Measuring, not waiting for a condition: the first quota window (11
	// x 1 s, Kafka's defaults), whose allowance is a burst, is left out.
	time.Sleep(11 * time.Second)
	p0, c0, t0 := produced.Load(), consumed.Load(), time.Now()
	const measure = 60 * time.Second
	time.Sleep(measure)
	p1, c1, t1 := produced.Load(), consumed.Load(), time.Now()
	stop()
	<-done
	<-done
	secs := t1.Sub(t0).Seconds()
	produceRate, consumeRate := float64(p1-p0)/secs, float64(c1-c0)/secs
	t.Logf("over %.0f s: loader produced %.3f MiB/s (quota 1), consumed %.3f MiB/s (quota 2); the other client filled at %.1f MiB/s",
		secs, produceRate/(1<<20), consumeRate/(1<<20), fillRate/(1<<20))
	if math.Abs(produceRate-produceQuota) > 0.1*produceQuota {
		t.Errorf("produce rate %.0f B/s is not within 10%% of %d", produceRate, produceQuota)
	}
	if math.Abs(consumeRate-consumeQuota) > 0.1*consumeQuota {
		t.Errorf("consume rate %.0f B/s is not within 10%% of %d", consumeRate, consumeQuota)
	}
	if fillRate < 2*consumeQuota {
		t.Errorf("the unthrottled client filled at only %.0f B/s", fillRate)
	}
	if throttledResponses(t, "produce", "loader", b1, b2) == 0 || throttledResponses(t, "fetch", "loader", b1, b2) == 0 {
		t.Error("no throttled responses counted for loader")
	}
	// Another client on the same brokers, at the same time as nothing
	// else, is not held to the loader's quota.
	start = time.Now()
	produceCopies(t, ctx, other, 8<<20/recordSize, value)
	if r := float64(8<<20) / time.Since(start).Seconds(); r < 2*produceQuota || throttledResponses(t, "produce", "other", b1, b2) != 0 {
		t.Errorf("the other client produced at %.0f B/s, throttled %v times", r, throttledResponses(t, "produce", "other", b1, b2))
	}

	// --entity-default: a client without a quota of its own gets it.
	configs("--alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=65536")
	def := quota.Entity{Client: quota.DefaultName}
	awaitQuotas(t, ctx, "the default client quota", func(c map[quota.Entity]quota.Values) bool {
		return c[def][quota.ProducerByteRate] == 65536
	}, b1, b2)
	if out := configs("--describe", "--entity-type", "clients", "--entity-default"); !strings.Contains(out, "producer_byte_rate=65536") {
		t.Errorf("kafka-configs --describe --entity-default:\n%s", out)
	}
	// Batches of at most 64 KiB (three records): a throttle is capped at
	// one quota window (11 s), so with the client's default 1 MB batches
	// the time taken depended on how many records each batch gathered (one
	// run beside a busy core took 9.3 s with 2 throttles). With small
	// requests every excess is paid for: at least (2 MiB - 640 KiB) /
	// 64 KiB/s = 22 s.
	fresh := newClient(t, bootstrap, kgo.ClientID("fresh"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.DefaultProduceTopic("quota-in"))
	start = time.Now()
	produceCopies(t, ctx, fresh, 2<<20/recordSize, value) // 2 MiB, of which the window allows 10 x 64 KiB at once
	if d := time.Since(start); d < 10*time.Second || throttledResponses(t, "produce", "fresh", b1, b2) == 0 {
		t.Errorf("2 MiB under a 64 KiB/s default took %v, throttled %v times", d, throttledResponses(t, "produce", "fresh", b1, b2))
	}
	configs("--alter", "--entity-type", "clients", "--entity-default", "--delete-config", "producer_byte_rate")

	// --delete-config lifts the loader's limit at once.
	configs("--alter", "--entity-type", "clients", "--entity-name", "loader", "--delete-config", "producer_byte_rate,consumer_byte_rate")
	awaitQuotas(t, ctx, "no quotas", func(c map[quota.Entity]quota.Values) bool { return len(c) == 0 }, b1, b2)
	// The loader's last throttle (at most one window) ended during the
	// tests above.
	before := throttledResponses(t, "produce", "loader", b1, b2)
	start = time.Now()
	produceCopies(t, ctx, producer, 8<<20/recordSize, value)
	if r := float64(8<<20) / time.Since(start).Seconds(); r < 2*produceQuota || throttledResponses(t, "produce", "loader", b1, b2) != before {
		t.Errorf("after --delete-config the loader produced at %.0f B/s and was throttled again", r)
	}
	if out := configs("--describe", "--entity-type", "clients", "--entity-name", "loader"); strings.Contains(out, "producer_byte_rate") {
		t.Errorf("kafka-configs --describe after --delete-config:\n%s", out)
	}
}

// produceCopies produces n copies of value and waits for every ack.
func produceCopies(t *testing.T, ctx context.Context, cl *kgo.Client, n int, value []byte) {
	t.Helper()
	var failed atomic.Pointer[error]
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := failed.Load(); err != nil && !errors.Is(*err, context.Canceled) {
		t.Fatalf("produce: %v", *err)
	}
}

// TestClientQuotasKafka28ZooKeeper: Kafka 2.8's `kafka-configs
// --zookeeper` writes quota nodes and notifications straight into
// ZooKeeper; both brokers apply them without a restart (a client over
// its quota is throttled) and lift them on --delete-config, and what
// AlterClientQuotas wrote, Kafka's --describe reads from ZooKeeper.
func TestClientQuotasKafka28ZooKeeper(t *testing.T) {
	t.Parallel() // mostly throttled, waiting: beside the other slow broker tests
	tools := testenv.Kafka28Tools(t)
	connect, b1, b2 := newZKQuotaBrokers(t)
	ctx := testenv.Context(t, 4*time.Minute)
	zk := func(args ...string) string {
		t.Helper()
		return runConfigCommand(t, ctx, tools, append([]string{"--zookeeper", connect}, args...)...)
	}
	admin := newClient(t, b1.Addr())
	createTopic(t, ctx, admin, "zk-quota", 1)

	zk("--alter", "--entity-type", "clients", "--entity-name", "zkloader", "--add-config", "producer_byte_rate=65536,request_percentage=150")
	e := quota.Entity{Client: quota.Named("zkloader")}
	awaitQuotas(t, ctx, "zkloader's quotas", func(c map[quota.Entity]quota.Values) bool {
		return c[e][quota.ProducerByteRate] == 65536 && c[e][quota.RequestPercentage] == 150
	}, b1, b2)
	cl := newClient(t, b1.Addr(), kgo.ClientID("zkloader"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("zk-quota"))
	value := bytes.Repeat([]byte("z"), 16<<10)
	start := time.Now()
	produceCopies(t, ctx, cl, 2<<20/len(value), value) // 2 MiB; the window lets 10 x 64 KiB through at once
	if d := time.Since(start); d < 10*time.Second || throttledResponses(t, "produce", "zkloader", b1, b2) == 0 {
		t.Errorf("2 MiB under a 64 KiB/s quota set in ZooKeeper took %v, throttled %v times", d, throttledResponses(t, "produce", "zkloader", b1, b2))
	}

	zk("--alter", "--entity-type", "clients", "--entity-name", "zkloader", "--delete-config", "producer_byte_rate,request_percentage")
	awaitQuotas(t, ctx, "zkloader's quotas removed", func(c map[quota.Entity]quota.Values) bool { return len(c) == 0 }, b1, b2)
	before := throttledResponses(t, "produce", "zkloader", b1, b2)
	produceCopies(t, ctx, cl, 2<<20/len(value), value)
	if after := throttledResponses(t, "produce", "zkloader", b1, b2); after != before {
		t.Errorf("throttled %v more times after --delete-config", after-before)
	}

	// Written through the brokers, read by Kafka 2.8 from ZooKeeper.
	codes := alterQuotas(t, ctx, admin, false,
		quotaEntry(quotaEntity(quotaEntityUser, "bob", quotaEntityClient, "etl"), quotaOp(quota.ConsumerByteRate, 4096, false)),
		quotaEntry(quotaEntity(quotaEntityClient, ""), quotaOp(quota.ProducerByteRate, 1<<30, false)))
	if len(codes) != 2 || codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("AlterClientQuotas: %v", codes)
	}
	if out := zk("--describe", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-name", "etl"); !strings.Contains(out, "consumer_byte_rate=4096") {
		t.Errorf("kafka-configs --zookeeper --describe of bob/etl:\n%s", out)
	}
	if out := zk("--describe", "--entity-type", "clients", "--entity-default"); !strings.Contains(out, "producer_byte_rate=1073741824") {
		t.Errorf("kafka-configs --zookeeper --describe of the default client:\n%s", out)
	}
}

// TestClientQuotasSASLUsers: quotas on a SASL user and on a user's client
// id, set with Kafka 3.9's kafka-configs, throttle that user's SCRAM
// logins (counted under Kafka's quota tags: user for users/<u>, user and
// client id for users/<u>/clients/<c>), and the user's SCRAM credentials,
// which share its node, keep working after the quotas are added and
// removed.
func TestClientQuotasSASLUsers(t *testing.T) {
	t.Parallel() // mostly throttled, waiting: beside the other slow broker tests
	tools := testenv.Kafka39Tools(t)
	b := newSASLBroker(t, nil)
	ctx := testenv.Context(t, 4*time.Minute)
	configs := func(args ...string) string {
		t.Helper()
		return runConfigCommand(t, ctx, tools, append([]string{"--bootstrap-server", b.ListenerAddr("PLAINTEXT")}, args...)...)
	}
	admin := newClient(t, b.ListenerAddr("PLAINTEXT"))
	createTopic(t, ctx, admin, "user-quota", 1)
	value := bytes.Repeat([]byte("u"), 16<<10)
	login := func(client string) *kgo.Client {
		t.Helper()
		cl := b.saslClient(t, "SASL_PLAINTEXT", mechanism("SCRAM-SHA-256", "alice", aliceSecret),
			kgo.ClientID(client), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("user-quota"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
			t.Fatalf("alice's SCRAM login as %s: %v", client, err)
		}
		return cl
	}
	throttled := func(user, client string) float64 {
		return counterValue(t, b.reg, "tributary_broker_quota_throttled_responses_total",
			map[string]string{"quota": "produce", "user": user, "client_id": client})
	}

	configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=65536")
	configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app",
		"--add-config", "producer_byte_rate=32768")
	alice, aliceApp := quota.Entity{User: quota.Named("alice")}, quota.Entity{User: quota.Named("alice"), Client: quota.Named("app")}
	awaitQuotas(t, ctx, "alice's quotas", func(c map[quota.Entity]quota.Values) bool {
		return c[alice][quota.ProducerByteRate] == 65536 && c[aliceApp][quota.ProducerByteRate] == 32768
	}, b.testBroker)
	out := configs("--describe", "--entity-type", "users", "--entity-name", "alice")
	for _, w := range []string{"producer_byte_rate=65536", "SCRAM-SHA-256=iterations=4096", "SCRAM-SHA-512=iterations=4096"} {
		if !strings.Contains(out, w) {
			t.Errorf("kafka-configs --describe of alice lacks %q:\n%s", w, out)
		}
	}

	// Over the quota, a request is answered at once with its throttle
	// time and the connection is then muted (KIP-219): the client's next
	// request waits it out.
	throttledNext := func(cl *kgo.Client, n int) time.Duration {
		t.Helper()
		produceCopies(t, ctx, cl, n, value)
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("next")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("the next produce after %d KiB waited %v", n*len(value)>>10, d)
		return d
	}
	// users/alice: 1 MiB at 64 KiB/s over a 10 s span is (102-64)/64 x
	// 10 s = 6 s of throttle.
	if d := throttledNext(login("batch"), 1<<20/len(value)); d < 3*time.Second || throttled("alice", "") == 0 {
		t.Errorf("after 1 MiB under 64 KiB/s alice's next produce took %v, throttled %v times under user=alice", d, throttled("alice", ""))
	}
	// users/alice/clients/app: 512 KiB at 32 KiB/s: 6 s again.
	if d := throttledNext(login("app"), 512<<10/len(value)); d < 3*time.Second || throttled("alice", "app") == 0 {
		t.Errorf("after 512 KiB under 32 KiB/s alice/app's next produce took %v, throttled %v times under user=alice,client_id=app", d, throttled("alice", "app"))
	}
	// An anonymous client on PLAINTEXT is not alice.
	if produceCopies(t, ctx, newClient(t, b.ListenerAddr("PLAINTEXT"), kgo.ClientID("app"), kgo.DefaultProduceTopic("user-quota")), 64, value); throttled("ANONYMOUS", "app") != 0 {
		t.Error("an anonymous client was throttled by alice's quota")
	}

	configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate")
	configs("--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app",
		"--delete-config", "producer_byte_rate")
	awaitQuotas(t, ctx, "alice's quotas removed", func(c map[quota.Entity]quota.Values) bool { return len(c) == 0 }, b.testBroker)
	b.awaitUser(t, ctx, "alice")
	login("after-removal") // the SCRAM credentials survived both removals
	out = configs("--describe", "--entity-type", "users", "--entity-name", "alice")
	if strings.Contains(out, "producer_byte_rate") || !strings.Contains(out, "SCRAM-SHA-512=iterations=4096") {
		t.Errorf("kafka-configs --describe of alice after removing her quotas:\n%s", out)
	}
}
