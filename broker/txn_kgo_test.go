package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// txnProduce runs one transaction of n records value prefix-i on topic,
// committed or aborted.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, n int, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("producing %s-%d: %v", prefix, i, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending transaction %s (commit %v): %v", prefix, commit, err)
	}
}

// readValues consumes topic until want values have come (or the context
// ends) and returns them per partition, in offset order.
func readValues(t *testing.T, ctx context.Context, addr, topic string, want int, opts ...kgo.Opt) map[int32][]string {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	out := map[int32][]string{}
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d values of %s: %v", got, want, topic, out)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			got++
		})
	}
	return out
}

// TestTxnKgoCommitAndAbort: a franz-go transactional producer commits,
// aborts and commits again; a read_committed consumer sees exactly the
// committed records in order, a read_uncommitted one all of them; the
// coordinator describes the id as CompleteCommit and a second producer
// with the same transactional id fences the first.
func TestTxnKgoCommitAndAbort(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, 2*time.Minute)
	admin := newClient(t, b.Addr())
	createTopic(t, ctx, admin, "txo", 2)
	cl := newClient(t, b.Addr(), kgo.TransactionalID("kgo-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(20*time.Second))
	txnProduce(t, ctx, cl, "txo", "c1", 10, true)
	txnProduce(t, ctx, cl, "txo", "a1", 10, false)
	txnProduce(t, ctx, cl, "txo", "c2", 10, true)

	committed := readValues(t, ctx, b.Addr(), "txo", 20, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for p := int32(0); p < 2; p++ {
		var want []string
		for _, prefix := range []string{"c1", "c2"} {
			for i := int(p); i < 10; i += 2 {
				want = append(want, fmt.Sprintf("%s-%d", prefix, i))
			}
		}
		if strings.Join(committed[p], ",") != strings.Join(want, ",") {
			t.Fatalf("read_committed partition %d: %v, want %v", p, committed[p], want)
		}
	}
	all := readValues(t, ctx, b.Addr(), "txo", 30, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if n := len(all[0]) + len(all[1]); n != 30 || !strings.Contains(strings.Join(all[1], ","), "a1-9") {
		t.Fatalf("read_uncommitted: %v", all)
	}

	// DescribeTransactions: the id's last transaction committed.
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"kgo-1"}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "kgo-1"
	if resp, err := fc.RequestWith(ctx, admin); err != nil || resp.ErrorCode != 0 || resp.NodeID != b.cfg.BrokerID {
		t.Fatalf("FindCoordinator for a transactional id: %+v %v", resp, err)
	}
	testenv.WaitFor(t, 30*time.Second, "kgo-1 described as CompleteCommit", func() (bool, string) {
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			return false, err.Error()
		}
		st := resp.TransactionStates[0]
		return st.ErrorCode == 0 && st.State == "CompleteCommit" && st.ProducerEpoch == 0, fmt.Sprintf("%+v", st)
	})

	// A new producer with the same id fences the first one.
	cl2 := newClient(t, b.Addr(), kgo.TransactionalID("kgo-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txnProduce(t, ctx, cl2, "txo", "c3", 2, true)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txo", Value: []byte("zombie")}).FirstErr()
	if err == nil {
		err = cl.EndTransaction(ctx, kgo.TryCommit)
	}
	if err == nil || (!strings.Contains(err.Error(), kerr.ProducerFenced.Message) && !strings.Contains(err.Error(), kerr.InvalidProducerEpoch.Message)) {
		t.Fatalf("the zombie producer was not fenced: %v", err)
	}
	final := readValues(t, ctx, b.Addr(), "txo", 22, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for _, vs := range final {
		for _, v := range vs {
			if v == "zombie" || strings.HasPrefix(v, "a1-") {
				t.Fatalf("read_committed saw %q: %v", v, final)
			}
		}
	}
}
