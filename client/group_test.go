package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// newGroupMember joins a group on ce with one topic and n streams; it is
// closed at test end. cfg.Logger defaults to the test's log at warn.
func newGroupMember(t *testing.T, ce *coordEnv, cluster *brokertest.Cluster, cfg GroupConfig, topic string, n int) (*GroupConsumer, []*Stream) {
	t.Helper()
	cfg.Brokers = cluster.Addrs()
	cfg.Coordinator = ce.connect
	if cfg.RebalanceBackoff == 0 {
		cfg.RebalanceBackoff = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = testenv.Logger(t, slog.LevelWarn)
	}
	ctx := testenv.Context(t, time.Minute)
	g, err := NewGroupConsumer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	streams, err := g.CreateMessageStreams(ctx, topic, n)
	if err != nil {
		t.Fatal(err)
	}
	return g, streams
}

// take reads k messages from s (bounded), as "p/offset=value" strings.
func take(t *testing.T, s *Stream, k int) []string {
	t.Helper()
	var out []string
	if k == 0 {
		return out
	}
	for m, err := range s.All(testenv.Context(t, 30*time.Second)) {
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(out), k, err)
		}
		out = append(out, fmt.Sprintf("%d/%d=%s", m.Partition, m.Offset, m.Value))
		if len(out) == k {
			break
		}
	}
	return out
}

func committedOffset(t *testing.T, ce *coordEnv, group, topic string, p int32) int64 {
	t.Helper()
	off, err := readOffset(testenv.Context(t, 10*time.Second), ce.admin, group, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestGroupCommitNeverPastHandled: a commit made inside a loop body covers
// the messages before it, not the one being handled; Close commits the
// last handled one.
func TestGroupCommitNeverPastHandled(t *testing.T) {
	cluster, ce := newZKCluster(t)
	cluster.CreateTopic(t, "t", 1)
	produce(t, cluster.Addrs(), "t", 1, 10)
	g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "c", AutoOffsetReset: "smallest", DisableAutoCommit: true}, "t", 1)
	ctx := testenv.Context(t, 30*time.Second)
	for m, err := range streams[0].All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("value-%d", m.Offset); string(m.Value) != want {
			t.Fatalf("offset %d: value %q, want %q", m.Offset, m.Value, want)
		}
		if err := g.CommitOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		if got := committedOffset(t, ce, "c", "t", 0); got != m.Offset {
			t.Fatalf("commit while handling offset %d wrote %d, want %d", m.Offset, got, m.Offset)
		}
		if m.Offset == 9 {
			break
		}
	}
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(t, ce, "c", "t", 0); got != 10 {
		t.Fatalf("after Close the registry holds %d, want 10", got)
	}
}

// TestGroupOffsetResetAndResume: a new group with "largest" sees only new
// records, one with "smallest" everything; a member that leaves after
// handling some is followed by one that continues exactly there.
func TestGroupOffsetResetAndResume(t *testing.T) {
	cluster, ce := newZKCluster(t)
	cluster.CreateTopic(t, "t", 1)
	produce(t, cluster.Addrs(), "t", 1, 20)

	_, latest := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "late", AutoOffsetReset: "latest"}, "t", 1)
	if got := committedOffset(t, ce, "late", "t", 0); got != -1 {
		t.Fatalf("nothing handled yet, but %d committed", got)
	}
	produceMore(t, cluster, "t", []string{"new-0", "new-1"})
	if got, want := take(t, latest[0], 2), []string{"0/20=new-0", "0/21=new-1"}; !slices.Equal(got, want) {
		t.Fatalf("largest: got %v, want %v", got, want)
	}

	g1, early := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "early", AutoOffsetReset: "earliest"}, "t", 1)
	got := take(t, early[0], 12)
	if got[0] != "0/0=value-0" || got[11] != "0/11=value-11" {
		t.Fatalf("smallest: got %v", got)
	}
	if err := g1.Close(testenv.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if off := committedOffset(t, ce, "early", "t", 0); off != 12 {
		t.Fatalf("committed %d after handling 0..11", off)
	}
	_, again := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "early"}, "t", 1)
	got = take(t, again[0], 10)
	if got[0] != "0/12=value-12" || got[7] != "0/19=value-19" || got[8] != "0/20=new-0" {
		t.Fatalf("resumed member: got %v", got)
	}
}

func produceMore(t *testing.T, cluster *brokertest.Cluster, topic string, values []string) {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Partitioner: ManualPartitioner()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	for _, v := range values {
		if err := p.Send(testenv.Context(t, 30*time.Second), &Message{Topic: topic, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupStreamsSpread: 7 partitions over 3 streams, round-robin in
// partition order; each stream sees only its partitions, in order. On the
// 3-broker cluster the partition count comes from /brokers/topics; on a
// single broker, which keeps no registry, from its metadata.
func TestGroupStreamsSpread(t *testing.T) {
	for _, setup := range []struct {
		name  string
		start func(t *testing.T) (*brokertest.Cluster, *coordEnv)
	}{
		{"zookeeper-3-brokers", func(t *testing.T) (*brokertest.Cluster, *coordEnv) { return newZKCluster(t) }},
		{"single-broker", func(t *testing.T) (*brokertest.Cluster, *coordEnv) { return brokertest.New(t), newMemCoord(t) }},
	} {
		t.Run(setup.name, func(t *testing.T) {
			cluster, ce := setup.start(t)
			cluster.CreateTopic(t, "t", 7)
			produce(t, cluster.Addrs(), "t", 7, 70)
			_, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "s", AutoOffsetReset: "smallest"}, "t", 3)
			for i, s := range streams {
				var want []int32
				for p := int32(i); p < 7; p += 3 {
					want = append(want, p)
				}
				next := map[int32]int64{}
				for _, m := range take(t, s, 10*len(want)) {
					var p int32
					var off int64
					var v string
					if _, err := fmt.Sscanf(m, "%d/%d=%s", &p, &off, &v); err != nil {
						t.Fatalf("stream %d: %q: %v", i, m, err)
					}
					if !slices.Contains(want, p) {
						t.Fatalf("stream %d got partition %d, want only %v", i, p, want)
					}
					// produce put record 7k+p at offset k of partition p.
					if off != next[p] || v != fmt.Sprintf("value-%d", 7*off+int64(p)) {
						t.Fatalf("stream %d partition %d: got offset %d = %s, want offset %d = value-%d",
							i, p, off, v, next[p], 7*next[p]+int64(p))
					}
					next[p] = off + 1
				}
			}
		})
	}
}

// TestGroupSessionExpiry: after its session expires, a member registers
// again, owns its partitions again and goes on delivering. Both
// coordinators: expiry is where memcoord (tributary dev's in-process
// coordination) must keep ZooKeeper's semantics.
func TestGroupSessionExpiry(t *testing.T) {
	for _, env := range []func(testing.TB) *coordEnv{
		newMemCoord,
		func(t testing.TB) *coordEnv { return newZooKeeper(t, 2*time.Second) },
	} {
		ce := env(t)
		t.Run(ce.name, func(t *testing.T) {
			cluster := newTestCluster(t, ce)
			cluster.CreateTopic(t, "t", 2)
			produce(t, cluster.Addrs(), "t", 2, 4)
			g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "x", ConsumerID: "only", AutoOffsetReset: "smallest"}, "t", 1)
			take(t, streams[0], 4)
			if err := g.CommitOffsets(testenv.Context(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			g.mu.Lock()
			old := g.sess
			g.mu.Unlock()
			ce.expire(t, old)
			testenv.WaitFor(t, 30*time.Second, "re-registration on a new session", func() (bool, string) {
				g.mu.Lock()
				sess := g.sess
				g.mu.Unlock()
				owners := readOwners(t, ce.admin, "x", "t")
				ok, _, _ := ce.admin.Exists(testenv.Context(t, 5*time.Second), idPath("x", "only"))
				return sess != old && ok && owners[0] == "only" && owners[1] == "only", fmt.Sprintf("owners %v registered %v", owners, ok)
			})
			produceMore(t, cluster, "t", []string{"after-expiry"})
			got := take(t, streams[0], 1)
			if len(got) != 1 || !slices.Contains([]string{"0/2=after-expiry", "1/2=after-expiry"}, got[0]) {
				t.Fatalf("after expiry got %v", got)
			}
		})
	}
}

// TestGroupRebalanceOnExpiredSession: a rebalance that runs on a session
// which has expired before the member learnt it (ZooKeeper reports the
// expiry only when the client reconnects; a watch or the metadata ticker
// may start a rebalance first) fails every call with a session error. That
// is no rebalance failure: the stream must get no error, and the member
// must register again and go on, though its session's States never
// reports the expiry here. (TestGroupSessionExpiry/zookeeper failed
// this way under load: "rebalance failed ... after 4 attempts: reading
// consumer registry: ... session expired".)
func TestGroupRebalanceOnExpiredSession(t *testing.T) {
	ce := newMemCoord(t)
	cluster := newTestCluster(t, ce)
	cluster.CreateTopic(t, "t", 2)
	produce(t, cluster.Addrs(), "t", 2, 4)
	var mu sync.Mutex
	var sessions []coord.Session
	connect := func(ctx context.Context) (coord.Session, error) {
		s, err := ce.connect(ctx)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if len(sessions) == 0 {
			s = &silentExpiry{Session: s, states: make(chan coord.SessionState)}
		}
		sessions = append(sessions, s)
		return s, nil
	}
	ctx := testenv.Context(t, time.Minute)
	g, err := NewGroupConsumer(ctx, GroupConfig{GroupID: "x", ConsumerID: "only", AutoOffsetReset: "smallest",
		Brokers: cluster.Addrs(), Coordinator: connect, RebalanceBackoff: 100 * time.Millisecond,
		Logger: testenv.Logger(t, slog.LevelWarn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	streams, err := g.CreateMessageStreams(ctx, "t", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := take(t, streams[0], 4); len(got) != 4 {
		t.Fatalf("got %v", got)
	}
	if err := g.CommitOffsets(testenv.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	old := g.sess
	g.mu.Unlock()
	ce.expire(t, old.(*silentExpiry).Session)
	// Nothing tells the member; force the registry to look changed so
	// that the rebalance does not stop at "unchanged" before a call fails.
	g.mu.Lock()
	g.settled = "stale"
	g.mu.Unlock()
	g.requestRebalance()
	testenv.WaitFor(t, 30*time.Second, "re-registration on a new session", func() (bool, string) {
		g.mu.Lock()
		sess := g.sess
		g.mu.Unlock()
		owners := readOwners(t, ce.admin, "x", "t")
		ok, _, _ := ce.admin.Exists(testenv.Context(t, 5*time.Second), idPath("x", "only"))
		return sess != old && ok && owners[0] == "only" && owners[1] == "only", fmt.Sprintf("owners %v registered %v", owners, ok)
	})
	if n := g.rebalanceErrs.Load(); n != 0 {
		t.Errorf("%d rebalance failures reported for a lost session", n)
	}
	produceMore(t, cluster, "t", []string{"after-expiry"})
	got := take(t, streams[0], 1)
	if len(got) != 1 || !slices.Contains([]string{"0/2=after-expiry", "1/2=after-expiry"}, got[0]) {
		t.Fatalf("after expiry got %v", got)
	}
}

// silentExpiry is a session whose States never reports anything: its
// owner learns of an expiry only from failing calls.
type silentExpiry struct {
	coord.Session
	states chan coord.SessionState
}

func (s *silentExpiry) States() <-chan coord.SessionState { return s.states }

// TestGroupSeek rewinds a partition to an offset and to a timestamp.
func TestGroupSeek(t *testing.T) {
	cluster, ce := newZKCluster(t)
	cluster.CreateTopic(t, "t", 1)
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	// Future timestamps: franz-go counts delivery.timeout.ms from a record's
	// Timestamp, so an old one would time out at once.
	t0 := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	for i := range 10 {
		m := &Message{Topic: "t", Value: fmt.Appendf(nil, "v%d", i), Timestamp: t0.Add(time.Duration(i) * time.Second)}
		if err := p.Send(testenv.Context(t, 30*time.Second), m); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(context.Background())
	g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "seek", AutoOffsetReset: "smallest"}, "t", 1)
	take(t, streams[0], 8)
	ctx := testenv.Context(t, 30*time.Second)
	if err := g.Seek(ctx, "t", 0, 2); err != nil {
		t.Fatal(err)
	}
	if got := take(t, streams[0], 2); !slices.Equal(got, []string{"0/2=v2", "0/3=v3"}) {
		t.Fatalf("after Seek(2): %v", got)
	}
	if err := g.SeekToTime(ctx, "t", 0, t0.Add(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := take(t, streams[0], 1); !slices.Equal(got, []string{"0/6=v6"}) {
		t.Fatalf("after SeekToTime(t0+6s): %v", got)
	}
	if err := g.Seek(ctx, "t", 5, 0); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Seek on a partition not owned: %v, want ErrNotOwned", err)
	}
}

// TestGroupTopicRegistry: with /brokers/topics/<topic> present, partitions
// come from it (not from the broker), and a change to it rebalances. The
// test writes the registry itself, which in a cluster only the controller
// does: so a single broker on a coordinator of its own, and the group on
// memcoord.
func TestGroupTopicRegistry(t *testing.T) {
	cluster, ce := brokertest.New(t), newMemCoord(t)
	cluster.CreateTopic(t, "t", 4)
	ctx := testenv.Context(t, 30*time.Second)
	path := coord.Join(brokerTopicsPath, "t")
	if _, err := ce.admin.CreateAll(ctx, path, []byte(`{"version":1,"partitions":{"0":[1],"1":[1]}}`), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	g, _ := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "r"}, "t", 1)
	if got := g.Owned()["t"]; !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("owns %v with a 2-partition registry", got)
	}
	if _, err := ce.admin.Set(ctx, path, []byte(`{"version":1,"partitions":{"0":[1],"1":[1],"2":[1],"3":[1]}}`), coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "rebalance onto 4 partitions", func() (bool, string) {
		got := g.Owned()["t"]
		return slices.Equal(got, []int32{0, 1, 2, 3}), fmt.Sprint(got)
	})
}

func TestGroupConfigValidate(t *testing.T) {
	for _, c := range []GroupConfig{
		{},
		{GroupID: "g"},
		{GroupID: "a/b", ZooKeeperConnect: "h:1"},
		{GroupID: "g", ZooKeeperConnect: "h:1", AutoOffsetReset: "middle"},
		{GroupID: "g", ZooKeeperConnect: "h:1", RebalanceBackoff: -1},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidConfig", c, err)
		}
	}
	if err := (GroupConfig{GroupID: "g", ZooKeeperConnect: "h:2181/chroot", AutoOffsetReset: "smallest"}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestTwoGroupsEachReceiveEverything: two groups of two members each read
// a 6-partition topic of the 3-broker cluster, written by the Producer with
// keys while they run. Each group receives every record exactly once, each
// partition in offset order, and so each key's records in the order they
// were sent.
func TestTwoGroupsEachReceiveEverything(t *testing.T) {
	cluster, ce := newZKCluster(t)
	const topic, partitions, keys, perKey = "both", 6, 30, 100
	cluster.CreateTopic(t, topic, partitions)

	type delivery struct {
		p   int32
		off int64
		val string
	}
	var mu sync.Mutex
	got := map[string][]delivery{} // group -> deliveries in the order handed out
	total := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, group := range []string{"first", "second"} {
		for i := range 2 {
			cfg := GroupConfig{GroupID: group, ConsumerID: fmt.Sprintf("%s-%d", group, i), AutoOffsetReset: "smallest"}
			_, streams := newGroupMember(t, ce, cluster, cfg, topic, 2)
			for _, s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for m, err := range s.All(ctx) {
						if err != nil {
							return
						}
						mu.Lock()
						got[group] = append(got[group], delivery{m.Partition, m.Offset, string(m.Key) + "=" + string(m.Value)})
						total[group]++
						mu.Unlock()
					}
				}()
			}
		}
	}

	p := newTestProducer(t, ProducerConfig{Brokers: cluster.Addrs(), Linger: time.Millisecond})
	for seq := range perKey {
		for k := range keys {
			m := &Message{Topic: topic, Key: fmt.Appendf(nil, "key-%d", k), Value: fmt.Appendf(nil, "%d", seq)}
			p.SendAsync(ctx, m, func(m *Message, err error) {
				if err != nil {
					t.Errorf("send %s=%s: %v", m.Key, m.Value, err)
				}
			})
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "both groups to receive every record", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return total["first"] >= keys*perKey && total["second"] >= keys*perKey, fmt.Sprint(total)
	})
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	cancel()
	wg.Wait()

	for group, ds := range got {
		if len(ds) != keys*perKey {
			t.Errorf("group %s: %d deliveries, want %d", group, len(ds), keys*perKey)
		}
		nextOff := map[int32]int64{}
		nextSeq := map[string]int{}
		for _, d := range ds {
			if d.off != nextOff[d.p] {
				t.Fatalf("group %s: partition %d handed offset %d where %d was due", group, d.p, d.off, nextOff[d.p])
			}
			nextOff[d.p]++
			key, seq, _ := strings.Cut(d.val, "=")
			if want := int32(KeyPartition([]byte(key), partitions)); d.p != want {
				t.Fatalf("group %s: %s in partition %d, murmur2 says %d", group, key, d.p, want)
			}
			if seq != strconv.Itoa(nextSeq[key]) {
				t.Fatalf("group %s: %s's record %s handed where %d was due", group, key, seq, nextSeq[key])
			}
			nextSeq[key]++
		}
		for k := range keys {
			if key := fmt.Sprintf("key-%d", k); nextSeq[key] != perKey {
				t.Errorf("group %s: %s: %d of %d records", group, key, nextSeq[key], perKey)
			}
		}
	}
}

// TestStreamBreakResumes: a loop that breaks out of a Stream in the middle
// of a fetched chunk leaves the chunk's rest to the next loop, so one
// message at a time still sees every offset, in order.
func TestStreamBreakResumes(t *testing.T) {
	cluster, ce := newZKCluster(t)
	cluster.CreateTopic(t, "t", 1)
	produce(t, cluster.Addrs(), "t", 1, 100)
	g, streams := newGroupMember(t, ce, cluster, GroupConfig{GroupID: "one-by-one", AutoOffsetReset: "smallest", DisableAutoCommit: true}, "t", 1)
	for i := range int64(100) {
		m := next(t, streams[0])
		if m.Offset != i || string(m.Value) != fmt.Sprintf("value-%d", i) {
			t.Fatalf("loop %d was handed %d=%s, want %d=value-%d", i, m.Offset, m.Value, i, i)
		}
	}
	if err := g.Close(testenv.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := committedOffset(t, ce, "one-by-one", "t", 0); got != 100 {
		t.Fatalf("committed %d after handling offsets 0..99", got)
	}
}
