package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// sessionTimeout is the brokers' zookeeper.session.timeout.ms in these
// tests: short, so that a killed broker's registration goes soon.
const sessionTimeout = proccluster.DefaultSessionTimeout

// waitTimeout bounds every wait for the cluster to converge.
const waitTimeout = 60 * time.Second

// clusterParallel is how many of the parallel tests run at once unless
// -test.parallel is given: each has clusters and chroots of its own and
// mostly waits on them (broker processes, failovers, rebalances), so more
// than GOMAXPROCS. The tests that bound how long something takes (a
// failover, an acks=all produce) or set the environment stay sequential.
const clusterParallel = 4

// TestMain removes the tributary binary the process clusters run.
func TestMain(m *testing.M) { os.Exit(testproc.MainParallel(m, clusterParallel)) }

// testCluster is a set of brokers with ids 1..n, whichever way they run.
type testCluster interface {
	// addr returns broker id's address, "" while it is down.
	addr(id int32) string
	// crash stops broker id without a clean shutdown where possible.
	crash(t *testing.T, id int32)
	// restart starts broker id again on its data and its port.
	restart(t *testing.T, id int32)
	// expiry is how long the coordinator takes to notice a crash.
	expiry() time.Duration
}

func bootstrap(c testCluster, n int) []string {
	var out []string
	for id := int32(1); id <= int32(n); id++ {
		if a := c.addr(id); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// procCluster runs each broker as a `tributary broker` process
// (proccluster), with the properties the scenarios here share.
type procCluster struct{ *proccluster.Cluster }

// procProps are procCluster's properties over proccluster's base ones.
var procProps = map[string]string{
	"num.partitions": "3",
	// Leadership goes back to a returned broker within a second (Kafka
	// checks every 300 s).
	"leader.imbalance.check.interval.seconds": "1",
}

// newProcCluster starts n broker processes on connect (a ZooKeeper connect
// string with its chroot); opts go after procCluster's own.
func newProcCluster(t *testing.T, connect string, n int, opts ...proccluster.Option) *procCluster {
	t.Helper()
	all := append([]proccluster.Option{proccluster.ZooKeeperConnect(connect), proccluster.Brokers(n),
		proccluster.Properties(procProps)}, opts...)
	return &procCluster{proccluster.New(t, all...)}
}

func (c *procCluster) addr(id int32) string { return c.Addr(id) }

func (c *procCluster) crash(t *testing.T, id int32) { t.Helper(); c.Kill(t, id) }

func (c *procCluster) restart(t *testing.T, id int32) { t.Helper(); c.Start(t, id) }

func (c *procCluster) expiry() time.Duration { return c.SessionTimeout() }

// memCluster runs brokers in this process on one memcoord server.
type memCluster struct{ *brokertest.Cluster }

func newMemCluster(t *testing.T, n int) *memCluster { t.Helper(); return newMemClusterWith(t, n, nil) }

// newMemClusterWith is newMemCluster with tweak adjusting each broker's
// configuration.
func newMemClusterWith(t *testing.T, n int, tweak func(*config.Config)) *memCluster {
	t.Helper()
	opts := []brokertest.Option{brokertest.Partitions(3), brokertest.Config(func(cfg *config.Config) {
		// Leadership goes back to a returned broker within a second
		// (Kafka checks every 300 s).
		cfg.Replication.LeaderImbalanceCheckInterval = time.Second
	})}
	if tweak != nil {
		opts = append(opts, brokertest.Config(tweak))
	}
	return &memCluster{brokertest.NewCluster(t, n, opts...)}
}

func (c *memCluster) addr(id int32) string { return c.AddrOf(id) }

// crash stops the broker: in one process there is no kill, and a closed
// member deregisters at once, which is the crash after its expiry.
func (c *memCluster) crash(t *testing.T, id int32) { t.Helper(); c.Stop(t, id) }

func (c *memCluster) restart(t *testing.T, id int32) { t.Helper(); c.Restart(t, id) }

func (c *memCluster) expiry() time.Duration { return 0 }

// newClient returns a franz-go client seeded with addrs.
func newClient(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadata asks one broker for the cluster metadata.
func metadata(t *testing.T, ctx context.Context, addr string, topics ...string) kadm.Metadata {
	t.Helper()
	md, err := kafkatest.MetadataFrom(ctx, addr, topics...)
	if err != nil {
		t.Fatalf("metadata from %s: %v", addr, err)
	}
	return md
}

// leadersOf returns partition -> leader.
func leadersOf(td kadm.TopicDetail) map[int32]int32 {
	out := map[int32]int32{}
	for p, d := range td.Partitions {
		out[p] = d.Leader
	}
	return out
}

// value is record i's payload: its index, then filler up to size bytes.
func value(i, size int) []byte {
	v := make([]byte, size)
	n := copy(v, strconv.Itoa(i)+":")
	for j := n; j < size; j++ {
		v[j] = byte('a' + (i+j)%26)
	}
	return v
}

// produce sends records first..first+n-1, record i to partition
// i % partitions (restricted to the partitions in only, when given), and
// fails t unless every one is acknowledged.
func produce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, first, n, partitions int, only map[int32]bool) {
	t.Helper()
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sent := 0
	for i := first; sent < n; i++ {
		p := int32(i % partitions)
		if only != nil && !only[p] {
			continue
		}
		sent++
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte("k" + strconv.Itoa(i)), Value: value(i, 100)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce to %s: %v", topic, firstErr)
	}
}

// consumeCheck reads every partition of topic from the start until want
// records (per partition) have arrived, and checks content: partition p
// holds exactly the indexes want[p], in order, each with its key and value.
func consumeCheck(t *testing.T, ctx context.Context, addrs []string, topic string, want map[int32][]int) {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	total := 0
	for p, idx := range want {
		offsets[p] = kgo.NewOffset().AtStart()
		total += len(idx)
	}
	cl := newClient(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(8<<20))
	got := map[int32]int{}
	seen := 0
	for seen < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d of %d records before %v", topic, seen, total, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Logf("fetch %s/%d: %v (retrying)", tp, p, err)
		})
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			n := got[r.Partition]
			if n >= len(want[r.Partition]) {
				bad = fmt.Errorf("partition %d: record beyond the %d expected at offset %d", r.Partition, n, r.Offset)
				return
			}
			i := want[r.Partition][n]
			if r.Offset != int64(n) || string(r.Key) != "k"+strconv.Itoa(i) || !bytes.Equal(r.Value, value(i, 100)) {
				bad = fmt.Errorf("partition %d offset %d: key %q value %.20q, want record %d at offset %d",
					r.Partition, r.Offset, r.Key, r.Value, i, n)
				return
			}
			got[r.Partition] = n + 1
			seen++
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
}

// expected lists, per partition, the indexes produce sends to it.
func expected(into map[int32][]int, first, n, partitions int, only map[int32]bool) {
	sent := 0
	for i := first; sent < n; i++ {
		p := int32(i % partitions)
		if only != nil && !only[p] {
			continue
		}
		sent++
		into[p] = append(into[p], i)
	}
}

// zk returns the standalone test ZooKeeper or fails t.
func zk(t *testing.T) string { t.Helper(); return testenv.ZooKeeper(t) }
