package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// BenchmarkFetchIsolation: the cost of read_committed against
// read_uncommitted for a kgo consumer reading a partition of 200
// transactions of 100 records of 200 bytes (every fifth aborted, with
// plain batches between), one full read per iteration; read_committed
// returns 16,000 of the 20,000 transactional records, read_uncommitted
// all of them. Reported: records/s delivered and MB/s of log read.
func BenchmarkFetchIsolation(b *testing.B) {
	tb := newTestBroker(b, nil)
	cl := newClient(b, tb.Addr(), kgo.AllowAutoTopicCreation())
	ctx := testenv.Context(b, 10*time.Minute)
	const topic, txns, per = "bench-txn", 200, 100
	if err := tb.CreateTopicWithConfigs(ctx, topic, 1, nil); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 200)
	var logBytes int64
	committed := 0
	for i := range txns {
		pid := int64(1000 + i%4)
		var rs []logtest.Record
		for j := range per {
			rs = append(rs, logtest.Record{Key: fmt.Appendf(nil, "k%d-%d", i, j), Value: value})
		}
		batch := logtest.Batch(logtest.Options{ProducerID: pid, Idempotent: true, BaseSequence: int32(i / 4 * per), Attributes: 0x10,
			Timestamp: time.Now().UnixMilli()}, rs...)
		plain := logtest.Batch(logtest.Options{Timestamp: time.Now().UnixMilli()}, logtest.Record{Value: value})
		for _, bt := range [][]byte{batch, plain} {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 30000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = bt
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			if err != nil {
				b.Fatalf("produce: %v", err)
			}
			logBytes += int64(len(bt))
		}
		commit := i%5 != 4
		if commit {
			committed += per
		}
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = pid, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Markers[0].Topics[0].Partitions[0].ErrorCode)
		}
		if err != nil {
			b.Fatalf("marker: %v", err)
		}
	}
	for _, level := range []struct {
		name string
		l    kgo.IsolationLevel
		want int
	}{{"read_uncommitted", kgo.ReadUncommitted(), txns*per + txns}, {"read_committed", kgo.ReadCommitted(), committed + txns}} {
		b.Run(level.name, func(b *testing.B) {
			b.SetBytes(logBytes)
			start := time.Now()
			for range b.N {
				c := newClient(b, tb.Addr(), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level.l),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				got := 0
				for got < level.want && ctx.Err() == nil {
					c.PollFetches(ctx).EachRecord(func(*kgo.Record) { got++ })
				}
				c.Close()
				if got != level.want {
					b.Fatalf("consumed %d records, want %d", got, level.want)
				}
			}
			b.ReportMetric(float64(b.N*level.want)/time.Since(start).Seconds(), "records/s")
		})
	}
}
