package client

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/internal/zktest"
)

// clusterSize is the number of brokers newTestCluster starts: issue 5's
// "must show" runs on three.
const clusterSize = 3

// testCluster is where tests produce and consume.
type testCluster struct {
	Bootstrap []string
	// brokers are indexed by broker id - 1.
	brokers []*broker.Broker
}

// newTestCluster starts clusterSize in-process brokers (ids 1..n,
// 127.0.0.1:0 listeners) registered with ce's coordination service: the
// ZooKeeper chroot of ce.zkConnect, or ce's memcoord server. Group members
// that use ce therefore read /brokers/ids and /brokers/topics/<t> from the
// registry the brokers write. The brokers close when the test ends.
func newTestCluster(t testing.TB, ce *coordEnv) *testCluster {
	t.Helper()
	c := &testCluster{}
	for id := int32(1); id <= clusterSize; id++ {
		cfg := broker.Config{
			BrokerID:               id,
			Listeners:              "PLAINTEXT://127.0.0.1:0",
			LogDirs:                []string{t.TempDir()},
			RetentionCheckInterval: time.Hour,
		}
		var opts []broker.Option
		if ce.zkConnect != "" {
			cfg.ZooKeeperConnect = ce.zkConnect
		} else {
			opts = append(opts, broker.WithCoordinator(cluster.SessionFactory(ce.connect)))
		}
		b := startBroker(t, cfg, opts...)
		c.brokers = append(c.brokers, b)
		c.Bootstrap = append(c.Bootstrap, b.Addr())
	}
	return c
}

// newZKCluster is the usual setup of a group test: a fresh chroot of the
// real ZooKeeper (zookeeper.session.timeout.ms 6 s, Kafka 0.8's consumer
// default) and a 3-broker cluster registered under it.
func newZKCluster(t testing.TB) (*testCluster, *coordEnv) {
	t.Helper()
	ce := newZooKeeper(t, DefaultZooKeeperSession)
	return newTestCluster(t, ce), ce
}

// newSingleBroker starts one broker in single-node mode, on its own private
// coordinator: no registry a group member can see, so members take partition
// counts from the broker's metadata.
func newSingleBroker(t testing.TB) *testCluster {
	t.Helper()
	b := startBroker(t, broker.Config{
		BrokerID:               1,
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
	})
	return &testCluster{Bootstrap: []string{b.Addr()}, brokers: []*broker.Broker{b}}
}

func startBroker(t testing.TB, cfg broker.Config, opts ...broker.Option) *broker.Broker {
	t.Helper()
	logger := testLogger(t, slog.LevelWarn).With("broker.id", cfg.BrokerID)
	b, err := broker.New(cfg, logger, prometheus.NewRegistry(), opts...)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		t.Fatalf("broker %d start: %v", cfg.BrokerID, err)
	}
	t.Cleanup(func() {
		cancel()
		if err := b.Close(); err != nil {
			t.Errorf("broker %d close: %v", cfg.BrokerID, err)
		}
	})
	return b
}

// createTopic creates a topic through broker 1 (the request goes to the
// controller, whichever broker that is) and waits until every broker's
// metadata gives each partition the same leader and every leader answers
// ListOffsets for it, so that a test's first request meets a settled
// cluster. It returns partition -> leading broker id.
func (c *testCluster) createTopic(t testing.TB, name string, partitions int32) map[int32]int32 {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	if err := c.brokers[0].CreateTopic(ctx, name, partitions); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	var leaders map[int32]int32
	testenv.WaitFor(t, 30*time.Second, "leaders of "+name+" agreed by every broker", func() (bool, string) {
		leaders = nil
		for i, b := range c.brokers {
			tp, ok := b.Member().Metadata().Topics[name]
			if !ok || len(tp.Partitions) != int(partitions) {
				return false, fmt.Sprintf("broker %d: %s not in its metadata", i+1, name)
			}
			got := map[int32]int32{}
			for _, p := range tp.Partitions {
				if p.Leader < 0 {
					return false, fmt.Sprintf("broker %d: partition %d has no leader", i+1, p.ID)
				}
				got[p.ID] = p.Leader
			}
			if leaders != nil && !maps.Equal(leaders, got) {
				return false, fmt.Sprintf("brokers disagree on leaders: %v, %v", leaders, got)
			}
			leaders = got
		}
		return true, ""
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	testenv.WaitFor(t, 30*time.Second, "every partition of "+name+" served by its leader", func() (bool, string) {
		listed, err := adm.ListEndOffsets(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		served := 0
		var state string
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				state = fmt.Sprintf("partition %d: %v", o.Partition, o.Err)
				return
			}
			served++
		})
		return served == int(partitions), state
	})
	return leaders
}

// testLogger writes to the test log (shown on failure) at level, or at
// debug with CLIENT_TEST_DEBUG set.
func testLogger(t testing.TB, level slog.Level) *slog.Logger {
	if os.Getenv("CLIENT_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

var _ io.Writer = testWriter{}

// testContext is bounded so that no test hangs.
func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// coordEnv is a coordination service for a test: a connector for group
// members and an admin session to read the registries directly.
type coordEnv struct {
	name    string
	connect Connector
	// zkConnect is the zookeeper.connect string (with chroot), "" for memcoord.
	zkConnect string
	admin     coord.Session
	expire    func(t testing.TB, s coord.Session)
}

func newMemCoord(t testing.TB) *coordEnv {
	t.Helper()
	srv := memcoord.NewServer()
	admin := srv.Connect(memcoord.Config{})
	t.Cleanup(func() { admin.Close() })
	return &coordEnv{
		name: "memcoord",
		connect: func(context.Context) (coord.Session, error) {
			return srv.Connect(memcoord.Config{}), nil
		},
		admin: admin,
		expire: func(t testing.TB, s coord.Session) {
			if err := srv.Expire(s.ID()); err != nil {
				t.Fatalf("expire: %v", err)
			}
		},
	}
}

// newZooKeeper uses the real standalone test ZooKeeper under a random
// chroot, removed when the test ends.
func newZooKeeper(t testing.TB, sessionTimeout time.Duration) *coordEnv {
	t.Helper()
	return newZooKeeperOn(t, testenv.ZooKeeper(t), sessionTimeout)
}

// newZooKeeperOn is newZooKeeper on servers ("h:p,h:p", no chroot).
func newZooKeeperOn(t testing.TB, servers string, sessionTimeout time.Duration) *coordEnv {
	t.Helper()
	// Registered first, the chroot's removal runs after everything else of
	// the test has closed; ephemeral nodes of SIGKILLed children go with it.
	connect := zktest.Chroot(t, servers, "client-test")
	ctx := testContext(t, 30*time.Second)
	admin, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatalf("connect to ZooKeeper %s: %v", connect, err)
	}
	t.Cleanup(func() { admin.Close() })
	return &coordEnv{
		name:      "zookeeper",
		zkConnect: connect,
		connect: func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: sessionTimeout})
		},
		admin: admin,
		expire: func(t testing.TB, s coord.Session) {
			if err := s.(*zkcoord.Session).Expire(testContext(t, 30*time.Second)); err != nil {
				t.Fatalf("expire: %v", err)
			}
		},
	}
}

// readOwners reads /consumers/<group>/owners/<topic> directly.
func readOwners(t testing.TB, s coord.Session, group, topic string) map[int32]string {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	dir := coord.Join("/consumers", group, "owners", topic)
	kids, _, err := s.Children(ctx, dir)
	if err != nil {
		return map[int32]string{}
	}
	out := map[int32]string{}
	for _, k := range kids {
		var p int32
		if _, err := fmt.Sscan(k, &p); err != nil {
			t.Fatalf("owner node %s/%s: %v", dir, k, err)
		}
		data, _, err := s.Get(ctx, coord.Join(dir, k))
		if err != nil {
			continue
		}
		out[p] = string(data)
	}
	return out
}

// produce writes n records to topic with kgo, keyed key-<i> with value
// value-<i>, manually partitioned i % partitions, and returns their offsets
// by index.
func produce(t testing.TB, bootstrap []string, topic string, partitions, n int) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t, 5*time.Minute)
	offsets := make([]int64, n)
	errc := make(chan error, 1)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions),
			Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i)}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
			offsets[i] = r.Offset
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	select {
	case err := <-errc:
		t.Fatalf("produce: %v", err)
	default:
	}
	return offsets
}
