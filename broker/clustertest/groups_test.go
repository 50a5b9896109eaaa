package clustertest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// groupCluster is three broker processes on ZooKeeper with a small
// offsets topic replicated (assigned) to all three.
type groupCluster struct{ *proccluster.Cluster }

func newGroupCluster(t *testing.T, connect string) *groupCluster {
	t.Helper()
	return &groupCluster{proccluster.New(t, proccluster.ZooKeeperConnect(connect), proccluster.Brokers(3),
		proccluster.Properties(map[string]string{
			"offsets.topic.num.partitions":     "6",
			"offsets.topic.replication.factor": "3",
			"group.initial.rebalance.delay.ms": "0",
			"group.min.session.timeout.ms":     "1000",
			// Leadership goes back to a returned broker within a second
			// (Kafka checks every 300 s).
			"leader.imbalance.check.interval.seconds": "1",
		}))}
}

// coordinatorOf asks a live broker for the group's coordinator until one
// is found that is live.
func (c *groupCluster) coordinatorOf(t *testing.T, ctx context.Context, group string) int32 {
	t.Helper()
	return liveCoordinator(t, ctx, c.Addrs, func(id int32) bool { return c.Addr(id) != "" }, group)
}

func liveCoordinator(t *testing.T, ctx context.Context, addrs func() []string, live func(int32) bool, group string) int32 {
	t.Helper()
	var id int32 = -1
	testenv.WaitFor(t, waitTimeout, "a live coordinator for "+group, func() (bool, string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 || !live(resp.NodeID) {
			return false, ""
		}
		id = resp.NodeID
		return true, ""
	})
	return id
}

// committedOffsets reads the group's offsets through the Kafka protocol.
func committedOffsets(t *testing.T, ctx context.Context, addrs []string, group, topic string, partitions int) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addrs))
	var out map[int32]int64
	testenv.WaitFor(t, waitTimeout, "the offsets of "+group, func() (bool, string) {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		out = map[int32]int64{}
		for p := range int32(partitions) {
			if o, ok := offs.Lookup(topic, p); ok && o.Err == nil {
				out[p] = o.At
			}
		}
		return true, ""
	})
	return out
}

// registryOffsets reads /consumers/<group>/offsets/<topic>/<p>.
func registryOffsets(t *testing.T, ctx context.Context, connect, group, topic string, partitions int) map[int32]int64 {
	t.Helper()
	s, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[int32]int64{}
	for p := range int32(partitions) {
		data, _, err := s.Get(ctx, fmt.Sprintf("/consumers/%s/offsets/%s/%d", group, topic, p))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			t.Fatalf("registry offset %q of %s-%d", data, topic, p)
		}
		out[p] = n
	}
	return out
}

// TestGroupCoordinatorFailover: three broker processes on ZooKeeper. A
// franz-go group consumer reads a 6-partition topic and commits; the
// offsets are in the paper's ZooKeeper registry too. The coordinator's
// broker is killed with SIGKILL: the group's coordinator moves to another
// broker, which serves every committed offset (none lost), the consumer
// rebalances onto it and commits what it reads next; a fresh consumer of
// the group resumes exactly after the committed offsets. When the killed
// broker comes back it leads the offsets partition again with a stale
// log, and still serves the newest offsets.
func TestGroupCoordinatorFailover(t *testing.T) {
	t.Parallel() // its own processes and chroot, mostly waiting on the failover
	connect := zktest.Chroot(t, zk(t), "groups")
	c := newGroupCluster(t, connect)
	ctx := testenv.Context(t, 5*time.Minute)
	const parts, first = 6, 600
	const group, topic = "failover", "orders"
	td := kafkatest.CreateTopic(t, c.Addrs(), topic, parts, nil)
	prod := newClient(t, c.Addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, ctx, prod, topic, 0, first, parts, nil)

	coordinator := c.coordinatorOf(t, ctx, group)
	cons := newClient(t, c.Addrs(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	got := map[int32][]int{}
	readInto := func(cl *kgo.Client, n int) {
		t.Helper()
		for seen := 0; seen < n; {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d: %v", seen, n, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				i, _ := strconv.Atoi(strings.TrimPrefix(string(r.Key), "k"))
				if string(r.Value) != string(value(i, 100)) || int32(i%parts) != r.Partition {
					t.Fatalf("record %s-%d@%d: key %q value %.20q", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
				}
				got[r.Partition] = append(got[r.Partition], i)
				seen++
			})
		}
	}
	readInto(cons, first)
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	for p := range int32(parts) {
		want[p] = first / parts
	}
	if o := committedOffsets(t, ctx, c.Addrs(), group, topic, parts); fmt.Sprint(o) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v", o, want)
	}
	if o := registryOffsets(t, ctx, connect, group, topic, parts); fmt.Sprint(o) != fmt.Sprint(want) {
		t.Fatalf("ZooKeeper registry holds %v, want %v", o, want)
	}

	// Kill the coordinator.
	c.Kill(t, coordinator)
	start := time.Now()
	moved := c.coordinatorOf(t, ctx, group)
	if moved == coordinator {
		t.Fatalf("coordinator still %d after it was killed", moved)
	}
	t.Logf("coordinator moved from broker %d to %d in %v", coordinator, moved, time.Since(start))
	if o := committedOffsets(t, ctx, c.Addrs(), group, topic, parts); fmt.Sprint(o) != fmt.Sprint(want) {
		t.Fatalf("new coordinator %d serves %v, want %v", moved, o, want)
	}

	// The consumer rebalances onto the new coordinator (membership is not
	// carried over: it gets UNKNOWN_MEMBER_ID there and joins again) ...
	adm := kadm.NewClient(newClient(t, c.Addrs()))
	testenv.WaitFor(t, waitTimeout, "the consumer to join the new coordinator", func() (bool, string) {
		dg, err := adm.DescribeGroups(ctx, group)
		return err == nil && dg[group].State == "Stable" && len(dg[group].Members) == 1, ""
	})
	t.Logf("group stable on broker %d %v after the kill", moved, time.Since(start))
	// ... then reads the new records on the partitions still led and
	// commits them there.
	live := map[int32]bool{}
	for p, l := range leadersOf(td) {
		if l != coordinator {
			live[p] = true
		}
	}
	const more = 120
	produce(t, ctx, prod, topic, first, more, parts, live)
	readInto(cons, more)
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit on the new coordinator: %v", err)
	}
	for p := range live {
		want[p] += more / int64(len(live))
	}
	testenv.WaitFor(t, waitTimeout, "the new offsets", func() (bool, string) {
		o := committedOffsets(t, ctx, c.Addrs(), group, topic, parts)
		if fmt.Sprint(o) != fmt.Sprint(want) {
			t.Logf("committed %v, want %v", o, want)
			return false, ""
		}
		return true, ""
	})
	cons.Close()

	// A fresh member resumes after the committed offsets: only new
	// records arrive.
	fresh := newClient(t, c.Addrs(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	produce(t, ctx, prod, topic, first+more, 60, parts, live)
	got = map[int32][]int{}
	readInto(fresh, 60)
	wantNew := map[int32][]int{}
	expected(wantNew, first+more, 60, parts, live)
	if fmt.Sprint(got) != fmt.Sprint(wantNew) {
		t.Fatalf("fresh member read %v, want %v", got, wantNew)
	}
	fresh.Close()

	// The killed broker returns and leads its offsets partitions again,
	// from a log that missed the commits made meanwhile: the registry
	// carries them.
	c.Start(t, coordinator)
	testenv.WaitFor(t, waitTimeout, "the old coordinator to lead again", func() (bool, string) {
		return c.coordinatorOf(t, ctx, group) == coordinator, ""
	})
	if o := committedOffsets(t, ctx, c.Addrs(), group, topic, parts); fmt.Sprint(o) != fmt.Sprint(want) {
		t.Fatalf("restarted coordinator serves %v, want %v", o, want)
	}
}

// TestGroupCoordinatorFailoverInProcess: the same move on brokers of one
// process sharing a memcoord server (tributary dev), where the registry
// is the in-process one: offsets committed with kadm (no members) are
// served by the next coordinator, and by the first one when it returns.
func TestGroupCoordinatorFailoverInProcess(t *testing.T) {
	c := newMemCluster(t, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	const group, topic, parts = "inproc", "inproc-t", 3
	addrs := func() []string { return bootstrap(c, 3) }
	kafkatest.CreateTopic(t, addrs(), topic, parts, nil)
	adm := kadm.NewClient(newClient(t, addrs()))
	commit := func(at int64) {
		t.Helper()
		offs := kadm.Offsets{}
		for p := range int32(parts) {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at + int64(p), LeaderEpoch: -1})
		}
		testenv.WaitFor(t, waitTimeout, "a commit", func() (bool, string) {
			resp, err := adm.CommitOffsets(ctx, group, offs)
			return err == nil && resp.Error() == nil, ""
		})
	}
	wantAt := func(at int64) map[int32]int64 {
		out := map[int32]int64{}
		for p := range int32(parts) {
			out[p] = at + int64(p)
		}
		return out
	}
	live := func(id int32) bool { return c.Broker(id) != nil }
	commit(10)
	coordinator := liveCoordinator(t, ctx, addrs, live, group)
	c.crash(t, coordinator)
	moved := liveCoordinator(t, ctx, addrs, live, group)
	if moved == coordinator {
		t.Fatalf("coordinator still %d", moved)
	}
	testenv.WaitFor(t, waitTimeout, "the offsets on the new coordinator", func() (bool, string) {
		return fmt.Sprint(committedOffsets(t, ctx, addrs(), group, topic, parts)) == fmt.Sprint(wantAt(10)), ""
	})
	commit(20)
	c.restart(t, coordinator)
	testenv.WaitFor(t, waitTimeout, "the first coordinator back", func() (bool, string) {
		return liveCoordinator(t, ctx, addrs, live, group) == coordinator, ""
	})
	testenv.WaitFor(t, waitTimeout, "the newest offsets on the returned coordinator", func() (bool, string) {
		return fmt.Sprint(committedOffsets(t, ctx, addrs(), group, topic, parts)) == fmt.Sprint(wantAt(20)), ""
	})
}
