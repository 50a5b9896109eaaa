package brokertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/brokertest"
)

// produceAndCount writes n records to topic through c and reads them
// back from the start.
func produceAndCount(t *testing.T, c *brokertest.Cluster, topic string, n int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := c.Client(t, kgo.AllowAutoTopicCreation())
	for i := range n {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	read := 0
	for read < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", read, n, topic)
		}
		read += fs.NumRecords()
	}
	return read
}

// TestNewServesAndRestartsOnItsPortAndData: a standalone broker serves at
// once (auto-creating with Partitions), and after Stop and Restart it is
// back on the same address with the records it had.
func TestNewServesAndRestartsOnItsPortAndData(t *testing.T) {
	var tweaked int32
	c := brokertest.New(t, brokertest.Partitions(2), brokertest.Config(func(cfg *config.Config) { tweaked = cfg.BrokerID }))
	if tweaked != 1 || c.Connector() != nil || c.Memcoord() != nil {
		t.Fatalf("tweak saw broker %d; connector %v, memcoord %v: want broker 1 in single-node mode", tweaked, c.Connector(), c.Memcoord())
	}
	produceAndCount(t, c, "auto", 5)
	if got := c.Broker(1).Topics()["auto"]; got != 2 {
		t.Fatalf("auto-created topic has %d partitions, want 2", got)
	}
	addr := c.Addr()
	c.Stop(t, 1)
	if c.Addr() != "" || c.Broker(1) != nil {
		t.Fatalf("stopped broker still has address %q", c.Addr())
	}
	c.Restart(t, 1)
	if c.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", c.Addr(), addr)
	}
	if n := produceAndCount(t, c, "auto", 5); n < 10 {
		t.Fatalf("after the restart the topic holds %d records, want 10", n)
	}
}

// TestNewClusterSharesOneCoordinator: three brokers on one memcoord server
// see each other; a created topic's partitions are led across them and
// served; a stopped broker drops out of Addrs and comes back.
func TestNewClusterSharesOneCoordinator(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	if c.Memcoord() == nil || len(c.Addrs()) != 3 {
		t.Fatalf("memcoord %v, addrs %v", c.Memcoord(), c.Addrs())
	}
	leaders := c.CreateTopic(t, "spread", 6)
	seen := map[int32]bool{}
	for _, l := range leaders {
		seen[l] = true
	}
	if len(leaders) != 6 || len(seen) != 3 {
		t.Fatalf("leaders %v: want 6 partitions led by all 3 brokers", leaders)
	}
	produceAndCount(t, c, "spread", 12)
	c.Stop(t, 2)
	if got := c.Addrs(); len(got) != 2 || c.AddrOf(2) != "" {
		t.Fatalf("with broker 2 stopped, addrs %v", got)
	}
	c.Restart(t, 2)
	if len(c.Addrs()) != 3 || len(c.Broker(1).Member().Metadata().Brokers) != 3 {
		t.Fatalf("after the restart, addrs %v", c.Addrs())
	}
}

// TestNewClusterOnZooKeeper: with ZooKeeper the brokers register in a
// chroot of the test ZooKeeper, which the connector reaches.
func TestNewClusterOnZooKeeper(t *testing.T) {
	c := brokertest.NewCluster(t, 2, brokertest.ZooKeeper())
	if c.ZooKeeper() == "" || c.Memcoord() != nil {
		t.Fatalf("zookeeper %q, memcoord %v", c.ZooKeeper(), c.Memcoord())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connector()(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, _, err := s.Children(ctx, "/brokers/ids")
	if err != nil || len(ids) != 2 {
		t.Fatalf("/brokers/ids: %v, %v; want 2 brokers", ids, err)
	}
	c.CreateTopic(t, "zk", 2)
	produceAndCount(t, c, "zk", 4)
}
