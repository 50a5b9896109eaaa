package broker

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// txnProduceCode sends one transactional batch (v9, acks=all) over c and
// returns the partition's error code.
func txnProduceCode(t *testing.T, c *rawConn, id, topic string, part int32, pid int64, epoch int16, seq int32, value string) int16 {
	t.Helper()
	req := produceRequest(9, -1, topic, part, logtest.Batch(logtest.Options{ProducerID: pid, Idempotent: true, ProducerEpoch: epoch,
		BaseSequence: seq, Attributes: 0x10}, logtest.Record{Value: []byte(value)}))
	req.TransactionID = kmsg.StringPtr(id)
	return c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// uncommittedValues reads a partition from offset 0 with read_uncommitted:
// the data records' values (control batches skipped).
func uncommittedValues(t *testing.T, c *rawConn, topic string, part int32) []string {
	t.Helper()
	req := fetchRequest(11, topic, part, 0, 0, 0)
	req.IsolationLevel = 0
	rp := c.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
	var out []string
	for b := rp.RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			t.Fatalf("batch: %v", err)
		}
		b = b[12+int(batch.Length):]
		if batch.Attributes&0x20 != 0 {
			continue
		}
		recs := batch.Records
		for n := int32(0); n < batch.NumRecords; n++ {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatalf("record: %v", err)
			}
			out = append(out, string(r.Value))
			var lenBuf [binary.MaxVarintLen32]byte
			recs = recs[int(r.Length)+binary.PutVarint(lenBuf[:], int64(r.Length)):]
		}
	}
	return out
}

// verifyOnly sends AddPartitionsToTxn v4 with one verify-only transaction.
func verifyOnly(c *rawConn, id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnResponse {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, parts
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	return c.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
}

// TestTxnVerification (KIP-890 part 1): a transactional batch to a
// partition that is not in the producer's transaction (never added, or
// arriving after the transaction was committed: the hanging transaction)
// gets INVALID_TXN_STATE and is not appended; after AddPartitionsToTxn it
// is. AddPartitionsToTxn v4 verify-only answers per partition and changes
// nothing. With transaction.partition.verification.enable=false the
// unverified batch goes in, as before Kafka 3.6.
func TestTxnVerification(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	createTopic(t, ctx, newClient(t, b.Addr()), "ver", 2)
	c := dialRaw(t, b.Addr())
	x := rawTxn{t, c, "ver-1"}
	ip := initTxn(t, x)
	pid, epoch := ip.ProducerID, ip.ProducerEpoch

	wantCode(t, "produce to a partition never added", txnProduceCode(t, c, x.id, "ver", 0, pid, epoch, 0, "stray"), kerr.InvalidTxnState)
	if got := uncommittedValues(t, c, "ver", 0); len(got) != 0 {
		t.Fatalf("the refused batch is in the log: %q", got)
	}
	wantCode(t, "add", x.add(3, pid, epoch, "ver", 0)[0], nil0)
	v := verifyOnly(c, x.id, pid, epoch, "ver", 0, 1)
	if v.ErrorCode != 0 || len(v.Transactions) != 1 || len(v.Transactions[0].Topics) != 1 {
		t.Fatalf("verify-only: %+v", v)
	}
	codes := map[int32]int16{}
	for _, p := range v.Transactions[0].Topics[0].Partitions {
		codes[p.Partition] = p.ErrorCode
	}
	wantCode(t, "verify an added partition", codes[0], nil0)
	wantCode(t, "verify a partition not added", codes[1], kerr.InvalidTxnState)
	if st := x.describe(); len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 1 {
		t.Fatalf("verify-only changed the transaction: %+v", st)
	}
	wantCode(t, "produce after AddPartitionsToTxn", txnProduceCode(t, c, x.id, "ver", 0, pid, epoch, 0, "a"), nil0)
	wantCode(t, "second batch", txnProduceCode(t, c, x.id, "ver", 0, pid, epoch, 1, "b"), nil0)
	wantCode(t, "produce to the other partition, not added", txnProduceCode(t, c, x.id, "ver", 1, pid, epoch, 0, "stray"), kerr.InvalidTxnState)
	wantCode(t, "commit", x.end(3, pid, epoch, true), nil0)
	testenv.WaitFor(t, 30*time.Second, "the transaction complete", func() (bool, string) {
		st := x.describe()
		return st.State == "CompleteCommit", st.State
	})
	// A late batch of the committed transaction would open one that no
	// one ends, holding the last stable offset for ever.
	wantCode(t, "produce after the commit", txnProduceCode(t, c, x.id, "ver", 0, pid, epoch, 2, "late"), kerr.InvalidTxnState)
	if got := uncommittedValues(t, c, "ver", 0); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("partition 0 holds %q, want [a b]", got)
	}
	if got := uncommittedValues(t, c, "ver", 1); len(got) != 0 {
		t.Fatalf("partition 1 holds %q, want nothing", got)
	}

	off := newTestBroker(t, func(c *config.Config) { c.DisableTxnVerification = true })
	createTopic(t, ctx, newClient(t, off.Addr()), "ver", 1)
	oc := dialRaw(t, off.Addr())
	y := rawTxn{t, oc, "ver-off"}
	ip = initTxn(t, y)
	wantCode(t, "produce unverified", txnProduceCode(t, oc, y.id, "ver", 0, ip.ProducerID, ip.ProducerEpoch, 0, "unverified"), nil0)
	if got := uncommittedValues(t, oc, "ver", 0); len(got) != 1 {
		t.Fatalf("with verification off the batch is not appended: %q", got)
	}
}

// initTxn inits x's transactional id once the coordinator is ready.
func initTxn(t *testing.T, x rawTxn) *kmsg.InitProducerIDResponse {
	t.Helper()
	var ip *kmsg.InitProducerIDResponse
	testenv.WaitFor(t, 30*time.Second, "InitProducerId", func() (bool, string) {
		fc := kmsg.NewPtrFindCoordinatorRequest() // creates __transaction_state
		fc.SetVersion(1)
		fc.CoordinatorType, fc.CoordinatorKey = 1, x.id
		x.c.roundTrip(fc)
		ip = x.init(4, 60000, -1, -1)
		return ip.ErrorCode == 0, fmt.Sprint(kerr.ErrorForCode(ip.ErrorCode))
	})
	return ip
}

// nil0 is "no error" for wantCode.
var nil0 = &kerr.Error{Message: "NONE", Code: 0}

// TestTxnVerificationProperty: Kafka's name, default on.
func TestTxnVerificationProperty(t *testing.T) {
	for v, want := range map[string]bool{"true": false, "false": true} {
		var c config.Config
		if _, err := config.SetProperty(&c, "transaction.partition.verification.enable", v); err != nil || c.DisableTxnVerification != want {
			t.Fatalf("%s: disabled=%v err=%v", v, c.DisableTxnVerification, err)
		}
	}
	var c config.Config
	if _, err := config.SetProperty(&c, "transaction.partition.verification.enable", "maybe"); err == nil || c.DisableTxnVerification {
		t.Fatalf("a bad value is accepted: %v", err)
	}
}

// TestTxnVerifyGuards: a marker for the producer written between the
// verification and the append voids it (nothing appended); another
// producer's or partition's marker does not; closed tickets leave nothing
// behind.
func TestTxnVerifyGuards(t *testing.T) {
	var g txnVerifyGuards
	ran := 0
	appendFn := func() { ran++ }

	void := g.begin("t", 0, 7)
	other := g.begin("t", 0, 7) // a second request in flight
	g.markerWritten("t", 0, 7)
	late := g.begin("t", 0, 7) // verified after the marker
	g.markerWritten("t", 1, 7)
	g.markerWritten("t", 0, 8)
	if void.appendIf(appendFn) || other.appendIf(appendFn) || ran != 0 {
		t.Fatalf("a ticket taken before a marker appended (ran %d)", ran)
	}
	if !late.appendIf(appendFn) || ran != 1 {
		t.Fatalf("a ticket taken after the marker did not append (ran %d)", ran)
	}
	g.begin("t", 2, 9).release()
	for i := range g.stripes {
		if n := len(g.stripes[i].m); n != 0 {
			t.Fatalf("stripe %d keeps %d guards after every ticket closed", i, n)
		}
	}
}
