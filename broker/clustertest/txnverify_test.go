package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestTxnVerificationAcrossBrokers (KIP-890 part 1): the leader of a
// partition is not the transaction coordinator of the producer, so it
// verifies a first transactional batch with AddPartitionsToTxn v4 to the
// coordinator broker: refused with INVALID_TXN_STATE (and not appended)
// before AddPartitionsToTxn, appended after, refused again after the
// commit.
func TestTxnVerificationAcrossBrokers(t *testing.T) {
	c := newMemCluster(t, 2)
	ctx := testenv.Context(t, 2*time.Minute)
	addrs := c.Addrs()
	cl := newClient(t, addrs)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "verify"); err != nil {
		t.Fatal(err)
	}
	const id = "verify-across"
	coord := txnCoordinatorOf(t, ctx, addrs, id)
	var part, leader int32 = -1, -1
	testenv.WaitFor(t, waitTimeout, "a partition led by the broker that does not coordinate "+id, func() (bool, string) {
		for p, l := range leadersOf(metadata(t, ctx, addrs[0], "verify").Topics["verify"]) {
			if l >= 0 && l != coord {
				part, leader = p, l
				return true, ""
			}
		}
		return false, "all led by the coordinator"
	})
	var pid int64
	var epoch int16
	testenv.WaitFor(t, waitTimeout, "InitProducerId", func() (bool, string) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode == 0, fmt.Sprint(kerr.ErrorForCode(resp.ErrorCode))
	})
	lc := cl.Broker(int(leader))
	produce := func(seq int32, v string) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, kmsg.StringPtr(id)
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "verify"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = part
		rp.Records = logtest.Batch(logtest.Options{ProducerID: pid, Idempotent: true, ProducerEpoch: epoch, BaseSequence: seq, Attributes: 0x10},
			logtest.Record{Value: []byte(v)})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, lc)
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	want := func(what string, got int16, code int16) {
		t.Helper()
		if got != code {
			t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
		}
	}
	want("produce before AddPartitionsToTxn", produce(0, "stray"), kerr.InvalidTxnState.Code)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "verify", []int32{part}
	add.Topics = append(add.Topics, at)
	aresp, err := add.RequestWith(ctx, cl)
	if err != nil || len(aresp.Topics) != 1 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, aresp)
	}
	want("produce after AddPartitionsToTxn", produce(0, "in"), 0)
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if eresp, err := end.RequestWith(ctx, cl); err != nil || eresp.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %+v", err, eresp)
	}
	// Once the markers are in (CompleteCommit), a late batch is refused.
	// Before, it would still join the open transaction on the partition,
	// as in Kafka: part 1 verifies only a transaction's first batch.
	testenv.WaitFor(t, waitTimeout, "the transaction complete", func() (bool, string) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		st := resp.TransactionStates[0]
		return st.State == "CompleteCommit", st.State
	})
	want("produce after the commit", produce(1, "late"), kerr.InvalidTxnState.Code)

	rc := newClient(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"verify": {part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	var got []string
	testenv.WaitFor(t, waitTimeout, "the committed record", func() (bool, string) {
		fs := rc.PollRecords(ctx, 10)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		return len(got) >= 1, fmt.Sprint(got)
	})
	// Nothing but "in" may follow: poll once more for strays.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rc.PollRecords(pctx, 10).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "in" {
		t.Fatalf("partition %d holds %q, want [in]", part, got)
	}
}
