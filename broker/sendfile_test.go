package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

const (
	sendfileBytesMetric = "tributary_fetch_sendfile_bytes_total"
	copiedBytesMetric   = "tributary_fetch_copied_bytes_total"
)

// consumePayload reads records 0..n-1 of testRecord's stream back, checking
// each one and the order within each partition, and returns the bytes of
// keys, values and headers received.
func consumePayload(t testing.TB, ctx context.Context, addr, topic string, n, partitions int) int64 {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := make([]int, partitions)
	for p := range next {
		next[p] = p
	}
	var payload int64
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("poll after %d records: %v", got, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			i := checkRecord(t, r, partitions)
			if p := int(r.Partition); i != next[p] {
				t.Fatalf("partition %d: record %d, want %d", p, i, next[p])
			} else {
				next[p] += partitions
			}
			payload += int64(len(r.Key) + len(r.Value))
			for _, h := range r.Headers {
				payload += int64(len(h.Key) + len(h.Value))
			}
			got++
		})
	}
	return payload
}

// TestFetchUsesSendfile consumes a few MB over real TCP from broker/partlog
// segments and checks that every record byte went out by sendfile.
func TestFetchUsesSendfile(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.SegmentBytes = 1 << 20 })
	ctx := testenv.Context(t, 2*time.Minute)
	const topic, parts, n = "zerocopy", 2, 40_000
	if err := b.CreateTopic(testenv.Context(t, time.Minute), topic, parts); err != nil {
		t.Fatal(err)
	}
	// Uncompressed, so that the bytes on the wire bound the payload from below.
	produceAll(t, ctx, newClient(t, b.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())), topic, n, parts)
	var stored int64
	for p := range parts {
		stored += b.partitions.Leader(topic, int32(p)).Log().Size()
	}
	if stored < 3<<20 {
		t.Fatalf("only %d bytes stored; the test should move a few MB", stored)
	}
	sentBefore := counterValue(t, b.reg, sendfileBytesMetric, nil)

	payload := consumePayload(t, ctx, b.Addr(), topic, n, parts)

	sent := counterValue(t, b.reg, sendfileBytesMetric, nil) - sentBefore
	copied := counterValue(t, b.reg, copiedBytesMetric, nil)
	out := counterValue(t, b.reg, "tributary_broker_bytes_out_total", map[string]string{"topic": topic})
	t.Logf("payload %d B, stored %d B, sendfile %.0f B, copied %.0f B", payload, stored, sent, copied)
	switch {
	case copied != 0:
		t.Fatalf("%s = %.0f, want 0: fetches fell back to copying", copiedBytesMetric, copied)
	case sent < float64(stored) || float64(stored) < float64(payload):
		// Every stored batch reaches the consumer whole at least once.
		t.Fatalf("%s grew by %.0f, less than the %d bytes stored (payload %d)", sendfileBytesMetric, sent, stored, payload)
	case sent != out:
		t.Fatalf("%s grew by %.0f but bytes_out_total is %.0f", sendfileBytesMetric, sent, out)
	}
}

// TestFetchCopyCounted: views that cannot use sendfile (the in-memory log)
// are counted as copied, never as sendfile.
func TestFetchCopyCounted(t *testing.T) {
	b := newTestBroker(t, nil, withMemLogs())
	ctx := testenv.Context(t, time.Minute)
	const topic, parts, n = "copied", 1, 2_000
	if err := b.CreateTopic(testenv.Context(t, time.Minute), topic, parts); err != nil {
		t.Fatal(err)
	}
	produceAll(t, ctx, newClient(t, b.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression())), topic, n, parts)
	payload := consumePayload(t, ctx, b.Addr(), topic, n, parts)
	copied := counterValue(t, b.reg, copiedBytesMetric, nil)
	if sent := counterValue(t, b.reg, sendfileBytesMetric, nil); sent != 0 {
		t.Fatalf("%s = %.0f for in-memory views", sendfileBytesMetric, sent)
	}
	if copied < float64(payload) {
		t.Fatalf("%s = %.0f, less than the %d payload bytes consumed", copiedBytesMetric, copied, payload)
	}
}
