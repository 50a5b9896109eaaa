package clustertest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// txnCoordinatorOf asks the cluster which broker coordinates a
// transactional id.
func txnCoordinatorOf(t *testing.T, ctx context.Context, addrs []string, id string) int32 {
	t.Helper()
	cl := newClient(t, addrs)
	defer cl.Close()
	var node int32
	testenv.WaitFor(t, waitTimeout, "a transaction coordinator for "+id, func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		node = resp.NodeID
		return resp.ErrorCode == 0, fmt.Sprintf("error %d", resp.ErrorCode)
	})
	return node
}

// TestTxnEtlWithBrokerKills re-creates franz-go's TestTxnEtl scenario on
// three broker processes: three transactional consume-transform-produce
// workers (GroupTransactSession: a consumer group with read_committed and
// require_stable offsets, each batch's output records and consumed offsets
// committed in one transaction) copy an input topic to an output topic
// while the group rebalances (workers join late) and while brokers are
// killed with SIGKILL and restarted: first the transaction coordinator of
// a worker, then the group coordinator. The output, read with
// read_committed, holds every input record exactly once.
func TestTxnEtlWithBrokerKills(t *testing.T) {
	t.Parallel() // its own processes and chroot, mostly waiting on kills and rebalances
	c := newProcCluster(t, zktest.Chroot(t, zk(t), "txn-etl"), 3, proccluster.Properties(map[string]string{
		"offsets.topic.num.partitions":                                "6",
		"offsets.topic.replication.factor":                            "3",
		"transaction.state.log.num.partitions":                        "6",
		"transaction.state.log.replication.factor":                    "3",
		"group.initial.rebalance.delay.ms":                            "0",
		"group.min.session.timeout.ms":                                "1000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}))
	addrs := func() []string { return bootstrap(c, 3) }
	ctx := testenv.Context(t, 8*time.Minute)
	const parts, n, phases = 6, 3000, 3
	adm := kadm.NewClient(newClient(t, addrs()))
	for _, topic := range []string{"etl-in", "etl-out"} {
		resp, err := adm.CreateTopic(ctx, parts, 3, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	prod := newClient(t, addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	var processed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(id int) {
		defer wg.Done()
		newSession := func() (*kgo.GroupTransactSession, error) {
			return kgo.NewGroupTransactSession(
				kgo.SeedBrokers(addrs()...),
				kgo.TransactionalID("etl-"+strconv.Itoa(id)),
				// Not 10 s: with KIP-890 verification a transaction's first
				// produce on a partition also waits for its coordinator, so a
				// transaction spanning a coordinator's kill and a 2-core
				// machine's load can outlive 10 s, be aborted by the new
				// coordinator and fence the worker (seen once under -race).
				kgo.TransactionTimeout(30*time.Second),
				kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("etl-in"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
				kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RetryTimeout(60*time.Second), kgo.MetadataMinAge(100*time.Millisecond),
			)
		}
		s, err := newSession()
		if err != nil {
			t.Errorf("worker %d: %v", id, err)
			return
		}
		defer func() { s.Close() }()
		restarts := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := s.PollRecords(pctx, 100)
			cancel()
			if fs.Empty() {
				continue
			}
			if err := s.Begin(); err != nil {
				// A producer id kgo holds for fatal (e.g. its
				// InitProducerId met the killed coordinator as an
				// unknown broker) ends the session; the worker starts a
				// new one on the same transactional id, as a real
				// application restarts: it fences the old producer and
				// resumes from the group's committed offsets, so the
				// output must still hold every input once.
				if restarts++; restarts > 3 {
					t.Errorf("worker %d: begin: %v (after %d new sessions)", id, err, restarts-1)
					return
				}
				t.Logf("worker %d: begin: %v; starting a new session", id, err)
				s.Close()
				if s, err = newSession(); err != nil {
					t.Errorf("worker %d: %v", id, err)
					return
				}
				continue
			}
			count := 0
			fs.EachRecord(func(r *kgo.Record) {
				count++
				s.Produce(ctx, &kgo.Record{Topic: "etl-out", Partition: r.Partition, Key: r.Key, Value: r.Value}, nil)
			})
			committed, err := s.End(ctx, kgo.TryCommit)
			if err != nil {
				t.Logf("worker %d: ending a transaction: %v (the session retries the batch)", id, err)
			}
			if committed {
				processed.Add(int64(count))
			}
		}
	}
	want := map[int32][]int{}
	expected(want, 0, n, parts, nil)
	produced := 0
	produceNext := func() {
		produce(t, ctx, prod, "etl-in", produced, n/phases, parts, nil)
		produced += n / phases
	}
	awaitCommitted := func(upTo int) {
		t.Helper()
		testenv.WaitFor(t, 3*time.Minute, fmt.Sprintf("the group to commit %d inputs", upTo), func() (bool, string) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "etl")
			if err != nil {
				return false, err.Error()
			}
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == "etl-in" && o.Err == nil && o.At > 0 {
					sum += o.At
				}
			})
			return sum >= int64(upTo), fmt.Sprintf("committed %d, processed %d", sum, processed.Load())
		})
	}

	produceNext()
	wg.Add(1)
	go worker(0)
	awaitCommitted(n / phases / 2)
	wg.Add(2)
	go worker(1) // the group rebalances
	go worker(2)

	// Kill the transaction coordinator of worker 0, then restart it.
	victim := txnCoordinatorOf(t, ctx, addrs(), "etl-0")
	t.Logf("killing broker %d (transaction coordinator of etl-0)", victim)
	c.crash(t, victim)
	produceNext()
	awaitCommitted(n / phases)
	c.restart(t, victim)

	// Kill the group coordinator.
	victim = liveCoordinator(t, ctx, addrs, func(id int32) bool { return c.addr(id) != "" }, "etl")
	t.Logf("killing broker %d (group coordinator of etl)", victim)
	c.crash(t, victim)
	produceNext()
	awaitCommitted(2 * n / phases)
	c.restart(t, victim)
	awaitCommitted(n)
	close(stop)
	wg.Wait()

	// Every input exactly once: read the output with read_committed up to
	// a sentinel produced after everything else.
	for p := range int32(parts) {
		r := &kgo.Record{Topic: "etl-out", Partition: p, Key: []byte("end"), Value: []byte("end")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, addrs(), kgo.ConsumeTopics("etl-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := map[int32][]int{}
	ends := 0
	for ends < parts {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the output: %d sentinels, %v", ends, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == "end" {
				ends++
				return
			}
			i, err := strconv.Atoi(strings.TrimPrefix(string(r.Key), "k"))
			if err != nil || string(r.Value) != string(value(i, 100)) || int32(i%parts) != r.Partition {
				t.Fatalf("output %d@%d: key %q value %.20q", r.Partition, r.Offset, r.Key, r.Value)
			}
			got[r.Partition] = append(got[r.Partition], i)
		})
	}
	for p := range int32(parts) {
		if fmt.Sprint(got[p]) != fmt.Sprint(want[p]) {
			t.Fatalf("output partition %d holds %d records, want %d exactly once in order:\n got %v\nwant %v", p, len(got[p]), len(want[p]), got[p], want[p])
		}
	}
}
