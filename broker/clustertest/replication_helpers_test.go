package clustertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// replCluster is a procCluster whose brokers carry replication properties
// (passed as --override key=value, so they win over the base file) and
// can be paused with SIGSTOP. A paused broker still accepts connections
// but never answers, so nothing in these tests asks it anything.
type replCluster struct{ *procCluster }

// newReplCluster starts n brokers on a fresh chroot of the test ZooKeeper
// with props on top of procCluster's base properties; opts (listeners,
// properties of their own) go after them.
func newReplCluster(t *testing.T, n int, props map[string]string, opts ...proccluster.Option) *replCluster {
	t.Helper()
	return newReplClusterOn(t, zktest.Chroot(t, zk(t), "replication"), n, props, opts...)
}

// newReplClusterOn is newReplCluster on connect, a chroot the test made.
func newReplClusterOn(t *testing.T, connect string, n int, props map[string]string, opts ...proccluster.Option) *replCluster {
	t.Helper()
	return &replCluster{newProcCluster(t, connect, n, append([]proccluster.Option{proccluster.Overrides(props)}, opts...)...)}
}

// partitionState is one broker's Metadata view of a partition.
type partitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Brokers     []int32 // the live brokers the same response lists
	Err         error
}

func (s partitionState) String() string {
	return fmt.Sprintf("leader %d epoch %d replicas %v isr %v offline %v brokers %v err %v",
		s.Leader, s.LeaderEpoch, s.Replicas, s.ISR, s.Offline, s.Brokers, s.Err)
}

// inISR reports whether id is in the ISR.
func (s partitionState) inISR(id int32) bool { return slices.Contains(s.ISR, id) }

// isrIs reports whether the ISR is exactly ids, in any order.
func (s partitionState) isrIs(ids ...int32) bool {
	a, b := slices.Clone(s.ISR), slices.Clone(ids)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// describePartition asks the broker at addr (and only it: a fresh client's
// first request goes to its seed) for topic's partition p, within 10 s.
func describePartition(ctx context.Context, addr, topic string, p int32) (partitionState, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return partitionState{}, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return partitionState{}, err
	}
	td, ok := md.Topics[topic]
	if !ok {
		return partitionState{}, fmt.Errorf("topic %s not in the metadata of %s", topic, addr)
	}
	if td.Err != nil {
		return partitionState{}, fmt.Errorf("topic %s at %s: %w", topic, addr, td.Err)
	}
	d, ok := td.Partitions[p]
	if !ok {
		return partitionState{}, fmt.Errorf("partition %s/%d not in the metadata of %s", topic, p, addr)
	}
	return partitionState{Leader: d.Leader, LeaderEpoch: d.LeaderEpoch, Replicas: d.Replicas, ISR: d.ISR,
		Offline: d.OfflineReplicas, Brokers: md.Brokers.NodeIDs(), Err: d.Err}, nil
}

// describe returns the view of partition p held by every broker in ask
// (default: every live broker) when they all agree on leader, epoch and
// ISR, and an error naming the views otherwise.
func (c *replCluster) describe(ctx context.Context, topic string, p int32, ask ...int32) (partitionState, error) {
	if len(ask) == 0 {
		ask = c.Live()
	}
	var first partitionState
	var views []string
	agree := true
	for i, id := range ask {
		s, err := describePartition(ctx, c.SeedsOf(id)[0], topic, p)
		if err != nil {
			return partitionState{}, fmt.Errorf("broker %d: %w", id, err)
		}
		views = append(views, fmt.Sprintf("broker %d: %v", id, s))
		if i == 0 {
			first = s
		} else if s.Leader != first.Leader || s.LeaderEpoch != first.LeaderEpoch || !s.isrIs(first.ISR...) {
			agree = false
		}
	}
	if !agree {
		return first, fmt.Errorf("brokers disagree: %s", strings.Join(views, "; "))
	}
	return first, nil
}

// awaitState polls partition p until every broker in ask (default: every
// live broker) agrees on a state satisfying cond; it fails t after d with
// the last views. It returns the state and how long it took.
func (c *replCluster) awaitState(t *testing.T, ctx context.Context, d time.Duration, what, topic string, p int32,
	cond func(partitionState) bool, ask ...int32) (partitionState, time.Duration) {
	t.Helper()
	start := time.Now()
	var last string
	for {
		s, err := c.describe(ctx, topic, p, ask...)
		switch {
		case err == nil && cond(s):
			return s, time.Since(start)
		case err != nil:
			last = err.Error()
		default:
			last = s.String()
		}
		if time.Since(start) > d || ctx.Err() != nil {
			t.Fatalf("%s/%d: %s: not within %v; last seen: %s", topic, p, what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitFullISR waits until every partition of topic has a leader and all
// rf replicas in its ISR, as every live broker sees it.
func (c *replCluster) awaitFullISR(t *testing.T, ctx context.Context, d time.Duration, topic string, parts int32, rf int) time.Duration {
	t.Helper()
	start := time.Now()
	for p := int32(0); p < parts; p++ {
		c.awaitState(t, ctx, d, fmt.Sprintf("a leader and all %d replicas in sync", rf), topic, p, func(s partitionState) bool {
			return s.Leader >= 0 && len(s.Replicas) == rf && len(s.ISR) == rf && s.Err == nil
		})
	}
	return time.Since(start)
}

// createReplicated creates topic with replication factor rf (-1: the
// brokers' default.replication.factor) and waits until every partition has
// want replicas, all in its ISR.
func (c *replCluster) createReplicated(t *testing.T, ctx context.Context, topic string, parts int32, rf int16, want int) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, c.Seeds()))
	resp, err := adm.CreateTopic(ctx, parts, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s with replication factor %d: %v %v (%s)", topic, rf, err, resp.Err, resp.ErrMessage)
	}
	c.awaitFullISR(t, ctx, waitTimeout, topic, parts, want)
}

// loadValue is record i's payload: unique per test (tag) and record.
func loadValue(tag string, i int) string {
	return fmt.Sprintf("%s-%08d-%s", tag, i, strings.Repeat("x", 40))
}

// ackInfo is where and when a record was acknowledged.
type ackInfo struct {
	partition int32
	offset    int64
	at        time.Time
}

// loadGen produces distinct records continuously (record i to partition
// i % parts), paced so that a busy machine keeps up, and records when each
// was handed to the client and where it was acknowledged.
type loadGen struct {
	t        *testing.T
	cl       *kgo.Client
	topic    string
	tag      string
	parts    int
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	produced []time.Time // by record index
	acked    map[int]ackInfo
	errs     map[string]int // error text -> count
	nerr     int
}

// startLoad runs a producer on topic; opts adjust the client (the default
// is kgo's: acks=all, idempotent, retried without limit).
func startLoad(t *testing.T, seeds []string, topic, tag string, parts int, opts ...kgo.Opt) *loadGen {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(200_000),
		// A constant short backoff: the figures measure the brokers, not
		// kgo's exponential backoff (up to 2.5 s by default).
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}, opts...)
	g := &loadGen{t: t, cl: newClient(t, seeds, all...), topic: topic, tag: tag, parts: parts,
		stop: make(chan struct{}), done: make(chan struct{}), acked: map[int]ackInfo{}, errs: map[string]int{}}
	go g.run()
	t.Cleanup(func() { g.halt() })
	return g
}

func (g *loadGen) run() {
	defer close(g.done)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		g.mu.Lock()
		i := len(g.produced)
		g.produced = append(g.produced, time.Now())
		g.mu.Unlock()
		r := &kgo.Record{Topic: g.topic, Partition: int32(i % g.parts), Value: []byte(loadValue(g.tag, i))}
		g.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			now := time.Now()
			g.mu.Lock()
			defer g.mu.Unlock()
			if err != nil {
				g.nerr++
				g.errs[err.Error()]++
				return
			}
			g.acked[i] = ackInfo{partition: r.Partition, offset: r.Offset, at: now}
		})
	}
}

// halt stops producing and waits (bounded) until every record handed to
// the client is acknowledged or failed.
func (g *loadGen) halt() {
	select {
	case <-g.stop:
		return
	default:
	}
	close(g.stop)
	<-g.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := g.cl.Flush(ctx); err != nil {
		g.t.Errorf("flushing the load: %v", err)
	}
}

// ackedCount returns how many records are acknowledged so far.
func (g *loadGen) ackedCount() int { g.mu.Lock(); defer g.mu.Unlock(); return len(g.acked) }

// awaitAcks waits until n more records than now are acknowledged, so that
// every step of a test happens under load.
func (g *loadGen) awaitAcks(t *testing.T, n int, d time.Duration) {
	t.Helper()
	base := g.ackedCount()
	testenv.WaitFor(t, d, fmt.Sprintf("%d more acknowledged records", n), func() (bool, string) { return g.ackedCount() >= base+n, "" })
}

// awaitAckAfter waits until a record for partition p handed to the client
// after t0 is acknowledged, and returns the time from t0 to that
// acknowledgement. Such a record did not exist before t0, so its
// acknowledgement comes from whatever leads p after t0.
func (g *loadGen) awaitAckAfter(t *testing.T, t0 time.Time, p int32, d time.Duration) time.Duration {
	t.Helper()
	var took time.Duration
	testenv.WaitFor(t, d, fmt.Sprintf("an acknowledged record for partition %d produced after %s", p, t0.Format("15:04:05.000")), func() (bool, string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		first := slices.IndexFunc(g.produced, func(at time.Time) bool { return at.After(t0) })
		if first < 0 {
			return false, ""
		}
		found := false
		for i := first; i < len(g.produced); i++ {
			if a, ok := g.acked[i]; ok && a.partition == p && (!found || a.at.Sub(t0) < took) {
				took, found = a.at.Sub(t0), true
			}
		}
		return found, ""
	})
	return took
}

// failures returns the number of failed records and a summary of why.
func (g *loadGen) failures() (int, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var parts []string
	for _, e := range slices.Sorted(maps.Keys(g.errs)) {
		parts = append(parts, fmt.Sprintf("%dx %s", g.errs[e], e))
	}
	return g.nerr, strings.Join(parts, "; ")
}

// watcher is a plain consumer (no group) reading every partition from the
// start for as long as the test runs, remembering what it saw where.
type watcher struct {
	cancel    context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	seen      map[int32]map[int64]string
	conflicts []string
	fetchErrs int
	lastErr   string
}

func startWatcher(t *testing.T, seeds []string, topic string, parts int32) *watcher {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	w := &watcher{done: make(chan struct{}), seen: map[int32]map[int64]string{}}
	for p := int32(0); p < parts; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
		w.seen[p] = map[int64]string{}
	}
	cl := newClient(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			w.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					w.fetchErrs++
					w.lastErr = err.Error()
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				v := string(r.Value)
				if old, ok := w.seen[r.Partition][r.Offset]; ok && old != v {
					w.conflicts = append(w.conflicts, fmt.Sprintf("partition %d offset %d: read %q, later %q", r.Partition, r.Offset, old, v))
				}
				w.seen[r.Partition][r.Offset] = v
			})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *watcher) halt() { w.cancel(); <-w.done }

// awaitCaughtUp waits until the watcher has read up to offset end (an
// exclusive end) of every partition in ends.
func (w *watcher) awaitCaughtUp(t *testing.T, ends map[int32]int64, d time.Duration) {
	t.Helper()
	testenv.WaitFor(t, d, "the running consumer reading everything acknowledged", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for p, end := range ends {
			if end > 0 {
				if _, ok := w.seen[p][end-1]; !ok {
					return false, ""
				}
			}
		}
		return true, ""
	})
}

// partitionLog is a partition's records by offset, from 0 to its end.
type partitionLog []string

// readPartition reads partition p of topic from offset 0 to its high
// watermark through whichever broker the seeds name as leader, and fails
// t unless every offset below it holds exactly one record (no gaps: the
// tests' topics are neither compacted nor transactional).
func readPartition(t *testing.T, ctx context.Context, seeds []string, topic string, p int32) partitionLog {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cl := newClient(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(16<<20))
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	lo, ok := ends.Lookup(topic, p)
	if !ok || lo.Err != nil {
		t.Fatalf("end offset of %s/%d: %v %v", topic, p, ok, lo.Err)
	}
	log := make(partitionLog, 0, lo.Offset)
	for int64(len(log)) < lo.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s/%d: %d of %d records before %v", topic, p, len(log), lo.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("reading %s/%d: %v (retrying)", topic, p, err) })
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case bad != nil:
			case r.Offset != int64(len(log)):
				bad = fmt.Errorf("%s/%d: record at offset %d after %d records: a gap or a repeat", topic, p, r.Offset, len(log))
			case r.Offset < lo.Offset:
				log = append(log, string(r.Value))
			}
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	return log
}

// checkLog holds the properties every replication test asserts of a
// partition's final log: every acknowledged record is at the offset it was
// acknowledged at, every record the running consumer ever read is at the
// offset it read it at, no value is there twice, and nothing there was
// never sent (sent reports whether a value was).
func checkLog(t *testing.T, p int32, log partitionLog, acked map[int64]string, w *watcher, sent func(string) bool) {
	t.Helper()
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf("partition %d: "+format, append([]any{p}, args...)...)
		}
	}
	for _, off := range slices.Sorted(maps.Keys(acked)) {
		switch v := acked[off]; {
		case off >= int64(len(log)):
			fail("acknowledged %.20q at offset %d, but the log ends at %d", v, off, len(log))
		case log[off] != v:
			fail("acknowledged %.20q at offset %d, the log holds %.20q there", v, off, log[off])
		}
	}
	if w != nil {
		w.mu.Lock()
		for _, off := range slices.Sorted(maps.Keys(w.seen[p])) {
			switch v := w.seen[p][off]; {
			case off >= int64(len(log)):
				fail("a consumer read %.20q at offset %d, but the log ends at %d", v, off, len(log))
			case log[off] != v:
				fail("a consumer read %.20q at offset %d, the log now holds %.20q there", v, off, log[off])
			}
		}
		for _, c := range w.conflicts {
			fail("the consumer read two values at one offset: %s", c)
		}
		w.mu.Unlock()
	}
	at := map[string]int64{}
	for off, v := range log {
		if first, ok := at[v]; ok {
			fail("%.20q at offsets %d and %d: a duplicate", v, first, off)
		}
		at[v] = int64(off)
		if !sent(v) {
			fail("offset %d holds %.30q, which no producer sent", off, v)
		}
	}
	if bad > 10 {
		t.Errorf("partition %d: %d problems in all", p, bad)
	}
}

// ackedBy returns, per partition, offset -> value of g's acknowledged
// records.
func (g *loadGen) ackedBy() map[int32]map[int64]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[int32]map[int64]string{}
	for i, a := range g.acked {
		if out[a.partition] == nil {
			out[a.partition] = map[int64]string{}
		}
		out[a.partition][a.offset] = loadValue(g.tag, i)
	}
	return out
}

// sent reports whether v is one of g's records.
func (g *loadGen) sent(v string) bool {
	rest, ok := strings.CutPrefix(v, g.tag+"-")
	if !ok || len(rest) < 8 {
		return false
	}
	i, err := strconv.Atoi(rest[:8])
	if err != nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return i < len(g.produced) && v == loadValue(g.tag, i)
}

// directConn reaches exactly one broker. kgo rewrites a ProduceRequest's
// acks to its client's setting, so there is one handle per acks value.
type directConn struct{ all, leader *kgo.Broker }

// rawProduce sends one ProduceRequest with acks (-1 or 1) to exactly the
// broker behind d (seed broker handles: no metadata lookup on the way), one
// batch holding values, and returns the partition's error code and base
// offset.
func rawProduce(ctx context.Context, d directConn, topic string, p int32, acks int16, values ...string) (int16, int64, error) {
	b := d.all
	if acks == 1 {
		b = d.leader
	}
	rs := make([]logtest.Record, len(values))
	for i, v := range values {
		rs[i] = logtest.Record{Value: []byte(v)}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = logtest.Batch(logtest.Options{Timestamp: time.Now().UnixMilli()}, rs...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("produce response for %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	rp2 := resp.Topics[0].Partitions[0]
	return rp2.ErrorCode, rp2.BaseOffset, nil
}

// directBroker returns handles that talk to addr only, with their
// connections already open (ApiVersions), so that later requests need
// nothing from other brokers.
func directBroker(t *testing.T, ctx context.Context, addr string) directConn {
	t.Helper()
	open := func(opts ...kgo.Opt) *kgo.Broker {
		cl := newClient(t, []string{addr}, opts...)
		b := cl.SeedBrokers()[0]
		if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, b); err != nil {
			t.Fatalf("ApiVersions to %s: %v", addr, err)
		}
		return b
	}
	return directConn{
		all:    open(kgo.RequiredAcks(kgo.AllISRAcks())),
		leader: open(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()),
	}
}

// errName names a Kafka error code for messages.
func errName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return "no error"
}
