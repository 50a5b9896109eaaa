package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// rawTxn drives the transaction APIs over one raw connection.
type rawTxn struct {
	t  *testing.T
	c  *rawConn
	id string
}

func (x rawTxn) init(version int16, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	x.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(version)
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(x.id), timeoutMs, pid, epoch
	return x.c.roundTrip(req).(*kmsg.InitProducerIDResponse)
}

func (x rawTxn) add(version int16, pid int64, epoch int16, topic string, partitions ...int32) map[int32]int16 {
	x.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = x.id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	out := map[int32]int16{}
	for _, t := range x.c.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

func (x rawTxn) end(version int16, pid int64, epoch int16, commit bool) int16 {
	x.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = x.id, pid, epoch, commit
	return x.c.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
}

func (x rawTxn) describe() kmsg.DescribeTransactionsResponseTransactionState {
	x.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{x.id}
	return x.c.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestTxnBadSequences: requests out of order get Kafka's codes and change
// nothing: EndTxn without a transaction (INVALID_TXN_STATE), a timeout
// past transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT), an old
// epoch (PRODUCER_FENCED from the KIP-588 versions, INVALID_PRODUCER_EPOCH
// before), another producer id (INVALID_PRODUCER_ID_MAPPING), an unknown
// partition (UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED);
// a producer that dies mid-transaction is aborted after its timeout and
// read_committed consumers move past it.
func TestTxnBadSequences(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		c.Txn.MaxTimeout = time.Minute
		c.Txn.AbortCheckInterval = 100 * time.Millisecond
	})
	ctx := testenv.Context(t, 2*time.Minute)
	admin := newClient(t, b.Addr())
	createTopic(t, ctx, admin, "bad", 2)
	c := dialRaw(t, b.Addr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(1)
	fc.CoordinatorType, fc.CoordinatorKey = 1, "bad-1"
	if resp := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 || resp.NodeID != b.cfg.BrokerID {
		t.Fatalf("FindCoordinator: %+v", resp)
	}
	x := rawTxn{t, c, "bad-1"}
	wantCode(t, "timeout past the maximum", x.init(4, 60001, -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	wantCode(t, "describe before any init", x.describe().ErrorCode, kerr.TransactionalIDNotFound)
	first := x.init(4, 2000, -1, -1)
	if first.ErrorCode != 0 || first.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", first)
	}
	pid := first.ProducerID
	wantCode(t, "EndTxn without a transaction", x.end(3, pid, 0, true), kerr.InvalidTxnState)
	if second := x.init(3, 2000, -1, -1); second.ErrorCode != 0 || second.ProducerID != pid || second.ProducerEpoch != 1 {
		t.Fatalf("second init: %+v", second)
	}
	// The first instance (epoch 0) is fenced, with each version's code.
	for v, want := range map[int16]*kerr.Error{0: kerr.InvalidProducerEpoch, 1: kerr.InvalidProducerEpoch, 2: kerr.ProducerFenced, 3: kerr.ProducerFenced} {
		wantCode(t, fmt.Sprintf("AddPartitionsToTxn v%d at the old epoch", v), x.add(v, pid, 0, "bad", 0)[0], want)
		wantCode(t, fmt.Sprintf("EndTxn v%d at the old epoch", v), x.end(v, pid, 0, true), want)
	}
	wantCode(t, "AddPartitionsToTxn with another producer id", x.add(3, pid+100, 1, "bad", 0)[0], kerr.InvalidProducerIDMapping)
	codes := x.add(3, pid, 1, "bad", 0, 7)
	wantCode(t, "an unknown partition", codes[7], kerr.UnknownTopicOrPartition)
	wantCode(t, "beside an unknown partition", codes[0], kerr.OperationNotAttempted)
	if st := x.describe(); st.ErrorCode != 0 || st.State != "Empty" || st.ProducerEpoch != 1 || len(st.Topics) != 0 {
		t.Fatalf("refused requests changed the transaction: %+v", st)
	}

	// A producer that dies mid-transaction: franz-go produces into a
	// transaction of 1 s and vanishes; the coordinator aborts it at its
	// timeout and a read_committed consumer reads what follows.
	dead := newClient(t, b.Addr(), kgo.TransactionalID("bad-dies"), kgo.TransactionTimeout(time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := dead.ProduceSync(ctx, &kgo.Record{Topic: "bad", Partition: 0, Value: []byte("never")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dead.Close() // no EndTxn
	xd := rawTxn{t, c, "bad-dies"}
	testenv.WaitFor(t, 30*time.Second, "the dead producer's transaction aborted", func() (bool, string) {
		st := xd.describe()
		return st.State == "CompleteAbort" && st.ProducerEpoch == 1, fmt.Sprintf("%+v", st)
	})
	plain := newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "bad", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := readValues(t, ctx, b.Addr(), "bad", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(got[0]) != "[after]" {
		t.Fatalf("read_committed after the aborted transaction: %v", got)
	}

	// ListTransactions filters by state.
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.SetVersion(1)
	lreq.StateFilters = []string{"CompleteAbort", "Bogus"}
	lresp := c.roundTrip(lreq).(*kmsg.ListTransactionsResponse)
	if lresp.ErrorCode != 0 || len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "bad-dies" ||
		fmt.Sprint(lresp.UnknownStateFilters) != "[Bogus]" {
		t.Fatalf("ListTransactions: %+v", lresp)
	}
}
