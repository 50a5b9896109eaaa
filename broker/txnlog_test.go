package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

type markerCall struct {
	partition int32
	pid       int64
	epoch     int16
	commit    bool
}

type recordingListener struct {
	mu    sync.Mutex
	calls []markerCall
}

func (r *recordingListener) TxnMarker(partition int32, pid int64, epoch int16, commit bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, markerCall{partition, pid, epoch, commit})
}

func (r *recordingListener) got() []markerCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]markerCall(nil), r.calls...)
}

func markerRequest(topic string, part int32, pid int64, epoch int16, commit bool) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

func markerCode(t *testing.T, ctx context.Context, cl *kgo.Client, req *kmsg.WriteTxnMarkersRequest) int16 {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("WriteTxnMarkers: %v", err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// TestWriteTxnMarkersListener: a marker written to a __consumer_offsets
// partition reaches the TxnMarkerListener once committed, with the
// partition, producer, epoch and outcome; markers of other topics do not;
// DescribeProducers shows a producer's ongoing transaction and, after its
// marker, none.
func TestWriteTxnMarkersListener(t *testing.T) {
	// Producers 77 and 88 have no transactional id: no coordinator could
	// verify their batches (KIP-890), so verification is off.
	tb := newTestBroker(t, func(c *config.Config) {
		c.Groups.OffsetsTopicPartitions = 1
		c.Groups.InitialRebalanceDelay = -1
		c.DisableTxnVerification = true
	})
	rec := &recordingListener{}
	tb.SetTxnMarkerListener(rec)
	ctx := testenv.Context(t, time.Minute)
	cl := newClient(t, tb.Addr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	testenv.WaitFor(t, time.Minute, "__consumer_offsets served", func() (bool, string) {
		if _, err := fc.RequestWith(ctx, cl); err != nil {
			return false, err.Error()
		}
		code := markerCode(t, ctx, cl, markerRequest(group.OffsetsTopic, 0, 77, 2, true))
		return code == 0, fmt.Sprint(kerr.ErrorForCode(code))
	})
	if got := rec.got(); len(got) != 1 || got[0] != (markerCall{0, 77, 2, true}) {
		t.Fatalf("listener heard %+v, want partition 0 producer 77 epoch 2 commit", got)
	}

	if err := tb.CreateTopicWithConfigs(ctx, "data", 1, nil); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30000, kmsg.StringPtr("app")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "data"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = logtest.Batch(logtest.Options{ProducerID: 88, Idempotent: true, ProducerEpoch: 4, Attributes: 0x10},
		logtest.Record{Value: []byte("x")}, logtest.Record{Value: []byte("y")})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	testenv.WaitFor(t, time.Minute, "transactional produce", func() (bool, string) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		return code == 0, fmt.Sprint(kerr.ErrorForCode(code))
	})
	adm := kadm.NewClient(cl)
	describe := func() kadm.DescribedProducer {
		t.Helper()
		ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"data": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		p := ds["data"].Partitions[0]
		if p.Err != nil || len(p.ActiveProducers) != 1 {
			t.Fatalf("DescribeProducers: %v %+v", p.Err, p.ActiveProducers)
		}
		for _, ap := range p.ActiveProducers {
			return ap
		}
		panic("unreachable")
	}
	if ap := describe(); ap.ProducerID != 88 || ap.ProducerEpoch != 4 || ap.LastSequence != 1 || ap.CurrentTxnStartOffset != 0 {
		t.Fatalf("producer during its transaction: %+v", ap)
	}
	if code := markerCode(t, ctx, cl, markerRequest("data", 0, 88, 4, false)); code != 0 {
		t.Fatalf("abort: %v", kerr.ErrorForCode(code))
	}
	if ap := describe(); ap.CurrentTxnStartOffset != -1 || ap.CoordinatorEpoch != 0 {
		t.Fatalf("producer after its abort: %+v", ap)
	}
	if got := rec.got(); len(got) != 1 {
		t.Fatalf("a marker of topic data reached the listener: %+v", got)
	}
}

// TestTxnAuthorization: WriteTxnMarkers needs ClusterAction, a
// transactional Produce Write on its TransactionalId, DescribeProducers
// Read on the topic; refused, nothing is written.
func TestTxnAuthorization(t *testing.T) {
	// Producer 5 of app-1 was never initialized: no coordinator could
	// verify its batch (KIP-890), so verification is off.
	ab := newACLBroker(t, map[string]string{"transaction.partition.verification.enable": "false"})
	ctx := testenv.Context(t, time.Minute)
	admin := ab.client(t, "admin")
	if err := ab.CreateTopicWithConfigs(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ab.grant(t, ctx, topicACL("t", acl.OpWrite))
	alice := ab.client(t, "alice")
	if code := markerCode(t, ctx, alice, markerRequest("t", 0, 5, 0, true)); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("marker without ClusterAction: %v", kerr.ErrorForCode(code))
	}
	verify := func(cl *kgo.Client) *kmsg.AddPartitionsToTxnResponse {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = "app-1", 5, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "t", []int32{0}
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp, err := req.RequestWith(ctx, cl.Broker(1)) // v4: the broker's own, no sharding
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := verify(alice); resp.Version < 4 || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Transactions) != 0 {
		t.Fatalf("AddPartitionsToTxn v4 without ClusterAction: %+v", resp)
	}
	if resp := verify(admin); resp.ErrorCode != 0 || len(resp.Transactions) != 1 {
		t.Fatalf("AddPartitionsToTxn v4 from a super user: %+v", resp)
	}
	produce := func() int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30000, kmsg.StringPtr("app-1")
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = logtest.Batch(logtest.Options{ProducerID: 5, Idempotent: true, Attributes: 0x10}, logtest.Record{Value: []byte("x")})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional produce without TransactionalId Write: %v", kerr.ErrorForCode(code))
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "t", []int32{0}
	dp.Topics = append(dp.Topics, dt)
	dresp, err := dp.RequestWith(ctx, alice)
	if err != nil || dresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("DescribeProducers without Read: %v %+v", err, dresp)
	}
	ab.grant(t, ctx, allowACL(acl.ResourceTransactionalID, "app-", acl.PatternPrefixed, "User:alice", acl.OpWrite))
	testenv.WaitFor(t, time.Minute, "produce with TransactionalId Write", func() (bool, string) {
		code := produce()
		return code == 0, fmt.Sprint(kerr.ErrorForCode(code))
	})
	if code := markerCode(t, ctx, admin, markerRequest("t", 0, 5, 0, true)); code != 0 {
		t.Fatalf("marker from a super user: %v", kerr.ErrorForCode(code))
	}
}
