package client

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testenv"
)

// testCluster is where tests produce and consume.
type testCluster struct {
	Bootstrap   []string
	createTopic func(t testing.TB, name string, partitions int32)
}

// testClusterSize is the number of brokers newTestCluster starts. It is 1
// until the multi-broker cluster package lands; the tests take a bootstrap
// list, so raising it (and building the cluster in newTestCluster) is all
// the 3-broker variants need.
const testClusterSize = 1

// newTestCluster starts testClusterSize in-process brokers on 127.0.0.1:0,
// closed when the test ends.
func newTestCluster(t testing.TB) *testCluster {
	t.Helper()
	if testClusterSize != 1 {
		t.Fatalf("a %d-broker cluster is not available yet", testClusterSize)
	}
	b := newTestBroker(t)
	return &testCluster{
		Bootstrap: []string{b.Addr()},
		createTopic: func(t testing.TB, name string, n int32) {
			t.Helper()
			if err := b.CreateTopic(testContext(t, 30*time.Second), name, n); err != nil {
				t.Fatalf("create topic %s: %v", name, err)
			}
		},
	}
}

func newTestBroker(t testing.TB) *broker.Broker {
	t.Helper()
	b, err := broker.New(broker.Config{
		BrokerID:               1,
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
	}, testLogger(t, slog.LevelWarn), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		t.Fatalf("broker start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := b.Close(); err != nil {
			t.Errorf("broker close: %v", err)
		}
	})
	return b
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

// newZooKeeper uses the real test ZooKeeper under a random chroot.
func newZooKeeper(t testing.TB, sessionTimeout time.Duration) *coordEnv {
	t.Helper()
	connect := fmt.Sprintf("%s/client-test-%016x", testenv.ZooKeeper(t), rand.Uint64())
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

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, last)
}
