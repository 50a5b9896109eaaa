package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce: one op is a franz-go transaction of 1,000 records
// of 100 bytes on an auto-created topic of one in-process broker, committed
// (InitProducerId once; AddPartitionsToTxn, the produces, EndTxn and the
// markers per op). Reports records/s.
func BenchmarkTxnProduce(b *testing.B) {
	tb := newTestBroker(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	admin := newClient(b, tb.Addr(), kgo.AllowAutoTopicCreation())
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "txn-bench", Value: []byte("x")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl := newClient(b, tb.Addr(), kgo.TransactionalID("bench"), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	value := bytes.Repeat([]byte("v"), 100)
	b.ResetTimer()
	for range b.N {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		for range 1000 {
			cl.Produce(ctx, &kgo.Record{Topic: "txn-bench", Value: value}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "records/s")
}
