package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// txnProduce sends one batch to topic/0 through broker id with acks=all and
// returns the partition's error code and base offset.
func txnProduce(t *testing.T, addr string, topic string, txnID *string, batch []byte) (int16, int64) {
	t.Helper()
	cl := newClient(t, []string{addr})
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 7, -1, 30000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	sp := resp.Topics[0].Partitions[0]
	return sp.ErrorCode, sp.BaseOffset
}

// writeMarker sends WriteTxnMarkers for topic/0 to broker id, as a
// transaction coordinator would, and returns the partition's error code.
func writeMarker(t *testing.T, addr string, topic string, part int32, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	cl := newClient(t, []string{addr})
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{part}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		t.Fatalf("write markers: %v", err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// committedFetch fetches topic/0 from offset 0 with read_committed from
// the broker at addr and returns the partition's answer (a failed request
// as its error code).
func committedFetch(t *testing.T, addr string, topic string) kmsg.FetchResponseTopicPartition {
	t.Helper()
	cl := newClient(t, []string{addr})
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.IsolationLevel, req.MaxBytes, req.SessionEpoch = 11, -1, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.ErrorCode = kerr.BrokerNotAvailable.Code
		return sp
	}
	return resp.Topics[0].Partitions[0]
}

// consumeValues reads topic from the start with the isolation level until
// it has want values, and checks they are exactly want, in order.
func consumeValues(t *testing.T, seeds []string, topic string, level kgo.IsolationLevel, want []string) {
	t.Helper()
	cl := newClient(t, seeds, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

// TestTxnPartitionsReplicated: transactional batches and markers sent by
// hand (raw Produce and WriteTxnMarkers, as a coordinator would send them)
// to a partition replicated on three brokers of one process: read_committed
// kgo consumers see only committed records in order, read_uncommitted ones
// see all; Fetch and ListOffsets report the last stable offset and the
// aborted transactions, and a follower that becomes leader when the leader
// stops answers the same.
func TestTxnPartitionsReplicated(t *testing.T) {
	c := brokertest.NewCluster(t, 3, brokertest.Logger(testenv.Logger(t, slog.LevelWarn)), brokertest.Config(func(cfg *config.Config) {
		cfg.DefaultReplicationFactor = 3
		cfg.Replication.LagTimeMax = 5 * time.Second
		cfg.DisableTxnVerification = true // producers without a coordinator (see txnScenario)
	}))
	const topic = "txn"
	leader := c.CreateTopic(t, topic, 1)[0]
	txnScenario(t, c.Addrs(), c.AddrOf, topic, leader, func(id int32) { c.Stop(t, id) })
}

// TestTxnPartitionsAfterLeaderKill is the same scenario on three broker
// processes (RF=3), the leader SIGKILLed: the new leader rebuilt the
// transactions from the batches and markers it replicated.
func TestTxnPartitionsAfterLeaderKill(t *testing.T) {
	c := newReplCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "5000",
		"transaction.partition.verification.enable": "false"}) // see txnScenario
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	const topic = "txn"
	c.createReplicated(t, ctx, topic, 1, 3, 3)
	st, err := c.describe(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	addrOf := func(id int32) string { return c.SeedsOf(id)[0] }
	txnScenario(t, c.Seeds(), addrOf, topic, st.Leader, func(id int32) { c.Kill(t, id) })
}

// txnScenario writes transactions by hand to topic/0 through its leader
// and checks what consumers, Fetch and ListOffsets see, then takes the
// leader down and checks the broker that takes over. Its producers have
// no transaction coordinator, so the brokers must not verify them
// (transaction.partition.verification.enable=false).
func txnScenario(t *testing.T, seeds []string, addrOf func(int32) string, topic string, leader int32, takeDown func(int32)) {
	t.Helper()
	txnID := "app-1"
	batch := func(pid int64, seq int32, txn bool, vals ...string) []byte {
		var rs []logtest.Record
		for _, v := range vals {
			rs = append(rs, logtest.Record{Value: []byte(v)})
		}
		o := logtest.Options{ProducerID: pid, Idempotent: true, BaseSequence: seq, Timestamp: time.Now().UnixMilli()}
		if txn {
			o.Attributes = 0x10
		}
		if pid < 0 {
			o = logtest.Options{Timestamp: time.Now().UnixMilli()}
		}
		return logtest.Batch(o, rs...)
	}
	steps := []struct {
		pid    int64
		seq    int32
		vals   []string
		marker string // "commit", "abort" instead of data
	}{
		{pid: -1, vals: []string{"p0"}},
		{pid: 1000, seq: 0, vals: []string{"a0", "a1"}},
		{pid: 1001, seq: 0, vals: []string{"b0"}},
		{pid: -1, vals: []string{"p1"}},
		{pid: 1000, seq: 2, vals: []string{"a2"}},
		{pid: 1000, marker: "abort"},
		{pid: 1001, seq: 1, vals: []string{"b1"}},
		{pid: 1001, marker: "commit"},
		{pid: 1000, seq: 3, vals: []string{"a3"}},
		{pid: 1000, marker: "commit"},
		{pid: 1002, seq: 0, vals: []string{"c0"}}, // stays open for now
		{pid: -1, vals: []string{"p2"}},
	}
	for i, s := range steps {
		if s.marker != "" {
			if code := writeMarker(t, addrOf(leader), topic, 0, s.pid, 0, s.marker == "commit"); code != 0 {
				t.Fatalf("step %d: marker: %v", i, kerr.ErrorForCode(code))
			}
			continue
		}
		var id *string
		if s.pid >= 1000 {
			id = &txnID
		}
		if code, _ := txnProduce(t, addrOf(leader), topic, id, batch(s.pid, s.seq, s.pid >= 1000, s.vals...)); code != 0 {
			t.Fatalf("step %d: produce: %v", i, kerr.ErrorForCode(code))
		}
	}
	// Offsets: p0 0, a0 1, a1 2, b0 3, p1 4, a2 5, abort 6, b1 7, commit 8,
	// a3 9, commit 10, c0 11, p2 12.
	const lso = 11
	consumeValues(t, seeds, topic, kgo.ReadCommitted(), []string{"p0", "b0", "p1", "b1", "a3"})
	consumeValues(t, seeds, topic, kgo.ReadUncommitted(), []string{"p0", "a0", "a1", "b0", "p1", "a2", "b1", "a3", "c0", "p2"})

	checkLeader := func(id int32) {
		t.Helper()
		testenv.WaitFor(t, waitTimeout, "read_committed fetch from broker "+fmt.Sprint(id), func() (bool, string) {
			sp := committedFetch(t, addrOf(id), topic)
			if sp.ErrorCode != 0 || sp.LastStableOffset != lso || sp.HighWatermark != 13 {
				return false, fmt.Sprintf("error %v, LSO %d, HW %d", kerr.ErrorForCode(sp.ErrorCode), sp.LastStableOffset, sp.HighWatermark)
			}
			if len(sp.AbortedTransactions) != 1 || sp.AbortedTransactions[0].ProducerID != 1000 || sp.AbortedTransactions[0].FirstOffset != 1 {
				return false, fmt.Sprintf("aborted %+v, want producer 1000 from offset 1", sp.AbortedTransactions)
			}
			return true, ""
		})
		cl := newClient(t, []string{addrOf(id)})
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.ReplicaID, lo.IsolationLevel = 4, -1, 1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		resp, err := lo.RequestWith(context.Background(), cl.SeedBrokers()[0])
		if err != nil || resp.Topics[0].Partitions[0].Offset != lso {
			t.Fatalf("ListOffsets read_committed latest from %d: %v %+v, want %d", id, err, resp, lso)
		}
	}
	checkLeader(leader)

	// Fencing and errors, none of which writes anything.
	if code := writeMarker(t, addrOf(leader), topic, 0, 1000, -1, false); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch marker: %v", kerr.ErrorForCode(code))
	}
	follower := int32(1 + leader%3)
	if code := writeMarker(t, addrOf(follower), topic, 0, 1002, 0, true); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("marker to follower %d: %v", follower, kerr.ErrorForCode(code))
	}
	if code := writeMarker(t, addrOf(leader), "no-such-topic", 0, 1002, 0, true); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker to unknown topic: %v", kerr.ErrorForCode(code))
	}
	ctl := logtest.Batch(logtest.Options{ProducerID: 1002, Idempotent: true, BaseSequence: 1, Attributes: 0x30},
		logtest.Record{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}})
	if code, _ := txnProduce(t, addrOf(leader), topic, &txnID, ctl); code != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v", kerr.ErrorForCode(code))
	}

	// The leader goes; a follower, which rebuilt the same state from the
	// replicated batches and markers, answers the same.
	takeDown(leader)
	var next int32
	testenv.WaitFor(t, waitTimeout, "a new leader", func() (bool, string) {
		for id := int32(1); id <= 3; id++ {
			if id == leader {
				continue
			}
			if sp := committedFetch(t, addrOf(id), topic); sp.ErrorCode == 0 {
				next = id
				return true, ""
			}
		}
		return false, "no follower leads yet"
	})
	checkLeader(next)
	if code := writeMarker(t, addrOf(next), topic, 0, 1002, 0, true); code != 0 {
		t.Fatalf("commit of the open transaction on the new leader: %v", kerr.ErrorForCode(code))
	}
	consumeValues(t, seeds, topic, kgo.ReadCommitted(), []string{"p0", "b0", "p1", "b1", "a3", "c0", "p2"})
}
