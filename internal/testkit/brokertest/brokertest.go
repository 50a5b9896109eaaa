package brokertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// Bounds of the fixture's waits: generous, since `make test` runs on a
// small shared machine.
const (
	// StartTimeout bounds one broker's start, until it serves.
	StartTimeout = 60 * time.Second
	// SettleTimeout bounds the wait until every broker knows every other,
	// and until a created topic is served.
	SettleTimeout = 60 * time.Second
	// portTimeout bounds Restart's wait for its old port to come free.
	portTimeout = 30 * time.Second
)

// Cluster is a set of running brokers with ids 1..n.
type Cluster struct {
	opts    options
	dir     string
	zk      string               // zookeeper.connect, "" off ZooKeeper
	srv     *memcoord.Server     // the shared memcoord server, if any
	connect coord.SessionFactory // nil for New's single-node broker
	logger  *slog.Logger

	mu      sync.Mutex
	brokers []*broker.Broker // index id-1; nil while stopped
	regs    []*prometheus.Registry
	ports   []int // the port each broker got, kept over restarts
	cancels []context.CancelFunc
}

// New starts one broker, id 1, and returns once it serves. Without a
// coordination option it runs in single-node mode; ZooKeeper,
// ZooKeeperConnect and Coordinator make it one member of a larger cluster.
func New(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	return start(t, 1, false, opts)
}

// NewCluster starts n brokers, ids 1..n, on one coordination service (an
// in-process memcoord server unless an option names another), and returns
// once each serves and each broker's metadata lists all n.
func NewCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("brokertest.NewCluster: %d brokers; want at least 1", n)
	}
	return start(t, n, true, opts)
}

func start(t testing.TB, n int, shared bool, opts []Option) *Cluster {
	t.Helper()
	c := &Cluster{dir: t.TempDir(), brokers: make([]*broker.Broker, n),
		regs: make([]*prometheus.Registry, n), ports: make([]int, n), cancels: make([]context.CancelFunc, n)}
	for _, o := range opts {
		o(&c.opts)
	}
	switch {
	case c.opts.connect != nil:
		c.connect = c.opts.connect
	case c.opts.zkConnect != "" || c.opts.zkFresh:
		c.zk = c.opts.zkConnect
		if c.zk == "" {
			// Registered before the brokers' cleanup, the chroot's removal
			// runs after they have closed.
			c.zk = zktest.Chroot(t, testenv.ZooKeeper(t), "brokertest")
		}
		zk := c.zk
		c.connect = func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, zk, zkcoord.Config{})
		}
	case shared:
		c.srv = memcoord.NewServer()
		c.connect = func(context.Context) (coord.Session, error) { return c.srv.Connect(memcoord.Config{}), nil }
	}
	c.logger = c.opts.logger
	if c.logger == nil {
		c.logger = testenv.Logger(t, slog.LevelWarn)
	}
	t.Cleanup(func() { c.close(t) })
	for id := int32(1); id <= int32(n); id++ {
		if err := c.startBroker(id); err != nil {
			t.Fatal(err)
		}
	}
	c.settle(t)
	return c
}

// config is broker id's configuration.
func (c *Cluster) config(id int32) config.Config {
	cfg := config.Config{
		BrokerID:  id,
		Listeners: "PLAINTEXT://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.ports[id-1])),
		LogDirs:   []string{c.Dir(id)},
		// Retention runs when a test asks for it, not in the middle.
		RetentionCheckInterval: time.Hour,
		NumPartitions:          c.opts.partitions,
		ZooKeeperConnect:       c.zk,
	}
	for _, tweak := range c.opts.tweaks {
		tweak(&cfg)
	}
	return cfg
}

// startBroker starts broker id on its directory and port (a free one the
// first time) and returns once it serves.
func (c *Cluster) startBroker(id int32) error {
	cfg := c.config(id)
	opts := c.opts.brokerOpts
	if c.zk == "" && c.connect != nil {
		opts = append(opts[:len(opts):len(opts)], broker.WithCoordinator(c.connect))
	}
	reg := prometheus.NewRegistry()
	b, err := broker.New(cfg, c.logger.With("broker.id", id), reg, opts...)
	if err != nil {
		return fmt.Errorf("brokertest: broker %d: %w", id, err)
	}
	// The broker serves until Close; ctx only ends a start that hangs.
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- b.Start(ctx) }()
	select {
	case err = <-started:
	case <-time.After(StartTimeout):
		cancel()
		<-started
		err = fmt.Errorf("not serving within %v", StartTimeout)
	}
	if err != nil {
		cancel()
		_ = b.Close()
		return fmt.Errorf("brokertest: starting broker %d: %w", id, err)
	}
	_, port, _ := net.SplitHostPort(b.Addr())
	c.mu.Lock()
	c.brokers[id-1], c.regs[id-1], c.cancels[id-1] = b, reg, cancel
	c.ports[id-1], _ = strconv.Atoi(port)
	c.mu.Unlock()
	return nil
}

// settle waits until every running broker's metadata lists every running
// broker; a single-node broker knows itself at once.
func (c *Cluster) settle(t testing.TB) {
	t.Helper()
	if c.connect == nil {
		return
	}
	testenv.WaitFor(t, SettleTimeout, "every broker to see every running broker", func() (bool, string) {
		running := c.running()
		for _, b := range running {
			m := b.Member()
			if m == nil {
				return false, fmt.Sprintf("broker %s has not joined", b.Addr())
			}
			if got := len(m.Metadata().Brokers); got != len(running) {
				return false, fmt.Sprintf("broker %s sees %d of %d brokers", b.Addr(), got, len(running))
			}
		}
		return true, ""
	})
}

// running returns the running brokers, ids ascending.
func (c *Cluster) running() []*broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*broker.Broker
	for _, b := range c.brokers {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// close stops every broker, last id first.
func (c *Cluster) close(t testing.TB) {
	c.mu.Lock()
	brokers, cancels := c.brokers, c.cancels
	c.brokers = make([]*broker.Broker, len(brokers))
	c.mu.Unlock()
	for i := len(brokers) - 1; i >= 0; i-- {
		if brokers[i] == nil {
			continue
		}
		err := brokers[i].Close()
		cancels[i]()
		if err != nil {
			t.Errorf("brokertest: closing broker %d: %v", i+1, err)
		}
	}
}

// Addr returns broker 1's address, "" while it is stopped.
func (c *Cluster) Addr() string { return c.AddrOf(1) }

// AddrOf returns broker id's address, "" while it is stopped.
func (c *Cluster) AddrOf(id int32) string {
	if b := c.Broker(id); b != nil {
		return b.Addr()
	}
	return ""
}

// Addrs returns the running brokers' addresses, ids ascending: the
// bootstrap list of a client.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, b := range c.running() {
		out = append(out, b.Addr())
	}
	return out
}

// Broker returns broker id (1-based), nil while it is stopped.
func (c *Cluster) Broker(id int32) *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 1 || int(id) > len(c.brokers) {
		return nil
	}
	return c.brokers[id-1]
}

// Metrics returns the metrics registry of broker id's current run.
func (c *Cluster) Metrics(id int32) *prometheus.Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.regs[id-1]
}

// Dir returns broker id's log directory.
func (c *Cluster) Dir(id int32) string { return filepath.Join(c.dir, fmt.Sprintf("broker-%d", id)) }

// ZooKeeper returns the brokers' zookeeper.connect, "" off ZooKeeper.
func (c *Cluster) ZooKeeper() string { return c.zk }

// Connector opens a session on the brokers' coordination service, for
// group members and for reading the registry directly; nil for New's
// single-node broker, whose coordinator is private.
func (c *Cluster) Connector() coord.SessionFactory { return c.connect }

// Memcoord returns the shared in-process coordination server, nil when
// the brokers use another.
func (c *Cluster) Memcoord() *memcoord.Server { return c.srv }

// Client returns a franz-go client seeded with the running brokers (opts
// come after the seeds), closed when t ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := network.NewClient(network.ClientConfig{Brokers: c.Addrs()}, opts...)
	if err != nil {
		t.Fatalf("brokertest: new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Stop closes broker id gracefully; its partitions are unavailable until
// Restart. Stopping a stopped broker does nothing.
func (c *Cluster) Stop(t testing.TB, id int32) {
	t.Helper()
	c.mu.Lock()
	b, cancel := c.brokers[id-1], c.cancels[id-1]
	c.brokers[id-1] = nil
	c.mu.Unlock()
	if b == nil {
		return
	}
	err := b.Close()
	cancel()
	if err != nil {
		t.Fatalf("brokertest: stopping broker %d: %v", id, err)
	}
}

// Restart starts a stopped broker id again on its directory and its port,
// and returns once it serves and every running broker sees every other.
// The port may have been taken meanwhile: Restart retries for a while.
func (c *Cluster) Restart(t testing.TB, id int32) {
	t.Helper()
	if c.Broker(id) != nil {
		t.Fatalf("brokertest: Restart of broker %d, which runs", id)
	}
	deadline := time.Now().Add(portTimeout)
	for {
		err := c.startBroker(id)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.settle(t)
}

// CreateTopic creates topic name with partitions partitions (at least 1)
// and returns partition -> leader once every running broker's metadata
// gives every partition the same leader and every leader serves
// ListOffsets for it: a test's first request meets a settled cluster.
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32) map[int32]int32 {
	t.Helper()
	return c.CreateTopicWithConfigs(t, name, partitions, nil)
}

// CreateTopicWithConfigs is CreateTopic with topic config overrides
// (Kafka's names: retention.ms, segment.bytes, ...).
func (c *Cluster) CreateTopicWithConfigs(t testing.TB, name string, partitions int32, configs map[string]string) map[int32]int32 {
	t.Helper()
	if partitions < 1 {
		t.Fatalf("brokertest: topic %s with %d partitions; want at least 1", name, partitions)
	}
	running := c.running()
	if len(running) == 0 {
		t.Fatalf("brokertest: creating topic %s: no broker runs", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), SettleTimeout)
	defer cancel()
	if err := running[0].CreateTopicWithConfigs(ctx, name, partitions, configs); err != nil {
		t.Fatalf("brokertest: creating topic %s: %v", name, err)
	}
	var leaders map[int32]int32
	testenv.WaitFor(t, SettleTimeout, "leaders of "+name+" agreed by every broker", func() (bool, string) {
		leaders = nil
		for _, b := range c.running() {
			got, state := leadersOn(b, name, partitions)
			if got == nil {
				return false, state
			}
			if leaders != nil && !maps.Equal(leaders, got) {
				return false, fmt.Sprintf("brokers disagree on leaders: %v, %v", leaders, got)
			}
			leaders = got
		}
		return leaders != nil, "no broker runs"
	})
	cl, err := network.NewClient(network.ClientConfig{Brokers: c.Addrs()})
	if err != nil {
		t.Fatalf("brokertest: new client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	testenv.WaitFor(t, SettleTimeout, "every partition of "+name+" served by its leader", func() (bool, string) {
		listed, err := adm.ListEndOffsets(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		var problems []string
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				problems = append(problems, fmt.Sprintf("partition %d: %v", o.Partition, o.Err))
			}
		})
		if n := len(listed[name]); n != int(partitions) && len(problems) == 0 {
			problems = append(problems, fmt.Sprintf("%d of %d partitions listed", n, partitions))
		}
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	return leaders
}

// leadersOn returns partition -> leader of topic in b's metadata, or nil
// and why not while a partition lacks one.
func leadersOn(b *broker.Broker, topic string, partitions int32) (map[int32]int32, string) {
	m := b.Member()
	if m == nil {
		return nil, fmt.Sprintf("broker %s has not joined", b.Addr())
	}
	tp, ok := m.Metadata().Topics[topic]
	if !ok || len(tp.Partitions) != int(partitions) {
		return nil, fmt.Sprintf("broker %s: %s not in its metadata with %d partitions", b.Addr(), topic, partitions)
	}
	out := map[int32]int32{}
	for _, p := range tp.Partitions {
		if p.Leader < 0 {
			return nil, fmt.Sprintf("broker %s: partition %d has no leader", b.Addr(), p.ID)
		}
		out[p.ID] = p.Leader
	}
	return out, ""
}
