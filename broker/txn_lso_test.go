package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// markerGate holds followers' replica appends of control batches (for
// partitions whose directory starts with prefix) until it is opened: the
// leader then has a transaction marker its in-sync replicas lack.
type markerGate struct {
	prefix string
	once   sync.Once
	open   chan struct{}
}

func newMarkerGate(prefix string) *markerGate {
	return &markerGate{prefix: prefix, open: make(chan struct{})}
}

func (g *markerGate) release() { g.once.Do(func() { close(g.open) }) }

// option wraps the broker's log opener.
func (g *markerGate) option() Option {
	return func(b *Broker) {
		inner := b.openLog
		b.openLog = func(dir string, s config.LogSettings) (partition.Log, error) {
			l, err := inner(dir, s)
			if err != nil || !strings.HasPrefix(filepath.Base(dir), g.prefix) {
				return l, err
			}
			return gatedLog{StorageLog: l.(partition.StorageLog), gate: g}, nil
		}
	}
}

// gatedLog is a partition log whose AppendReplica of batches holding a
// control batch waits for its gate.
type gatedLog struct {
	partition.StorageLog
	gate *markerGate
}

func (l gatedLog) AppendReplica(batches []byte) (partition.AppendResult, error) {
	for b := batches; len(b) >= 61; {
		size := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if binary.BigEndian.Uint16(b[21:])&0x20 != 0 {
			<-l.gate.open
			break
		}
		if size > len(b) {
			break
		}
		b = b[size:]
	}
	return l.StorageLog.AppendReplica(batches)
}

// committedEnd is ListOffsets latest with read_committed (the LSO) of
// topic/0 on the broker c is connected to.
func committedEnd(t *testing.T, c *rawConn, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(5)
	req.ReplicaID, req.IsolationLevel = -1, 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := c.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("ListOffsets read_committed: code %d", sp.ErrorCode)
	}
	return sp.Offset
}

// TestTxnLSOWaitsForReplicatedMarker: on three brokers, a committed
// transaction whose COMMIT marker only the leader has (its followers,
// still in the ISR, have not copied it: the high watermark is at the
// marker) stays unstable to read_committed consumers, as Kafka's LSO is
// min(first unstable offset, high watermark) with a transaction unstable
// until its marker is below the high watermark: ListOffsets read_committed
// answers the transaction's first offset and a read_committed Fetch
// returns nothing. Once the followers have the marker the records are
// read, exactly.
func TestTxnLSOWaitsForReplicatedMarker(t *testing.T) {
	srv := memcoord.NewServer()
	connect := WithCoordinator(func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil })
	gate := newMarkerGate("lso-")
	var bs []*testBroker
	for id := int32(1); id <= 3; id++ {
		bs = append(bs, newTestBroker(t, func(c *config.Config) {
			c.BrokerID, c.DefaultReplicationFactor = id, 3
			c.Replication.LagTimeMax = 10 * time.Minute // the gated followers stay in the ISR
		}, connect, gate.option()))
	}
	t.Cleanup(gate.release) // before the brokers close (cleanups run last first)
	ctx := testenv.Context(t, 3*time.Minute)
	const topic = "lso-topic"
	testenv.WaitFor(t, time.Minute, "broker 1 sees the 3 brokers", func() (bool, string) {
		m, err := bs[0].clusterMember()
		if err != nil {
			return false, err.Error()
		}
		n := len(m.Metadata().Brokers)
		return n == 3, fmt.Sprintf("%d brokers", n)
	})
	if err := bs[0].createTopic(ctx, topic, 1, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	var leader *testBroker
	testenv.WaitFor(t, time.Minute, "every broker serves the topic with 3 in-sync replicas", func() (bool, string) {
		leader = nil
		for _, b := range bs {
			p := b.partitions.Replica(topic, 0)
			if p == nil {
				return false, fmt.Sprintf("broker %d has no replica", b.cfg.BrokerID)
			}
			if p.Leading() {
				isr := p.ISRSize()
				if isr != 3 {
					return false, fmt.Sprintf("ISR of %d", isr)
				}
				leader = b
			}
		}
		return leader != nil, "no leader"
	})
	prod := newClient(t, leader.Addr(), kgo.TransactionalID("lso-txn"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(2*time.Minute))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		v := fmt.Sprintf("v%d", i)
		want = append(want, v)
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := leader.partitions.Leader(topic, 0)
	testenv.WaitFor(t, time.Minute, "the records are replicated", func() (bool, string) {
		return p.HighWatermark() == 5, fmt.Sprintf("high watermark %d", p.HighWatermark())
	})
	ended := make(chan error, 1)
	go func() { ended <- prod.EndTransaction(ctx, kgo.TryCommit) }()
	testenv.WaitFor(t, time.Minute, "the COMMIT marker is in the leader's log", func() (bool, string) {
		return p.Log().EndOffset() == 6, fmt.Sprintf("end offset %d", p.Log().EndOffset())
	})

	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with the marker at 5 held on the followers", hw)
	}
	conn := dialRaw(t, leader.Addr())
	if lso := committedEnd(t, conn, topic); lso != 0 {
		t.Fatalf("read_committed end offset %d while the COMMIT marker is on the leader only, want 0 (the transaction's first offset)", lso)
	}
	fetch := conn.roundTrip(func() kmsg.Request {
		req := fetchRequest(11, topic, 0, 0, 0, 1)
		req.IsolationLevel = 1
		return req
	}()).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fetch.ErrorCode != 0 || len(fetch.RecordBatches) != 0 || fetch.LastStableOffset != 0 {
		t.Fatalf("read_committed fetch: code %d, %d bytes, LSO %d; want no records and LSO 0",
			fetch.ErrorCode, len(fetch.RecordBatches), fetch.LastStableOffset)
	}

	gate.release()
	testenv.WaitFor(t, time.Minute, "the LSO passes the replicated marker", func() (bool, string) {
		lso := committedEnd(t, conn, topic)
		return lso >= 6, fmt.Sprintf("LSO %d", lso)
	})
	if err := <-ended; err != nil {
		t.Fatalf("EndTransaction: %v", err)
	}
	got := readValues(t, ctx, leader.Addr(), topic, len(want), kgo.FetchIsolationLevel(kgo.ReadCommitted()))[0]
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed consumer read %q, want %q", got, want)
	}
}
