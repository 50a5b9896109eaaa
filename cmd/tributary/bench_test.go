package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
)

const (
	benchTestRecords = 20000
	benchTestSize    = 100
)

// endOffsets returns the sum of the end offsets of topic's partitions and
// how many partitions it has.
func endOffsets(t *testing.T, bs, topic string) (total int64, partitions int) {
	t.Helper()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
		partitions++
	})
	return total, partitions
}

func TestBenchProduceConsumeE2E(t *testing.T) {
	bs := brokertest.New(t).Addr()
	n := strconv.Itoa(benchTestRecords)
	size := strconv.Itoa(benchTestSize)

	res := mustRun(t, "", "bench", "produce", "--bootstrap", bs, "--topic", "perf", "--records", n,
		"--record-size", size, "--acks", "1", "--partitions", "3")
	p := parsePerfLine(t, res.stdout)
	if p.records != benchTestRecords {
		t.Fatalf("produce reported %d records, want %d", p.records, benchTestRecords)
	}
	if p.recPerSec <= 0 || p.mbPerSec <= 0 || p.maxMs < p.p999Ms || p.p999Ms < p.p99Ms || p.p99Ms < p.p95Ms || p.p95Ms < p.p50Ms {
		t.Fatalf("produce figures are inconsistent: %+v", p)
	}
	// The broker holds exactly what the bench reported, over the
	// partitions it asked for.
	total, parts := endOffsets(t, bs, "perf")
	if total != benchTestRecords || parts != 3 {
		t.Fatalf("topic perf holds %d records in %d partitions, want %d in 3", total, parts, benchTestRecords)
	}

	res = mustRun(t, "", "bench", "consume", "--bootstrap", bs, "--topic", "perf", "--records", n, "--timeout-ms", "10000")
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != 2 || lines[0] != consumeHeader {
		t.Fatalf("consume printed %q", res.stdout)
	}
	m := consumeLineRE.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("consume line %q is not in kafka-consumer-perf-test shape", lines[1])
	}
	if m[5] != n {
		t.Fatalf("consume reported %s records, want %s", m[5], n)
	}
	wantMB := strconv.FormatFloat(float64(benchTestRecords*benchTestSize)/mebibyte, 'f', 4, 64)
	if m[3] != wantMB {
		t.Fatalf("consume reported %s MB, want %s", m[3], wantMB)
	}

	res = mustRun(t, "", "bench", "e2e", "--bootstrap", bs, "--topic", "perf-e2e", "--records", n,
		"--record-size", size, "--partitions", "2", "--timeout-ms", "10000")
	p = parsePerfLine(t, res.stdout)
	if p.records != benchTestRecords || p.p50Ms <= 0 || p.maxMs < p.p99Ms {
		t.Fatalf("e2e figures are inconsistent: %+v", p)
	}
	if total, _ := endOffsets(t, bs, "perf-e2e"); total != benchTestRecords {
		t.Fatalf("topic perf-e2e holds %d records, want %d", total, benchTestRecords)
	}
}

func TestBenchExistingTopicKeepsPartitions(t *testing.T) {
	bs := brokertest.New(t).Addr()
	createTopic(t, bs, "wide", 4)
	res := mustRun(t, "", "bench", "produce", "--bootstrap", bs, "--topic", "wide", "--records", "500",
		"--partitions", "2", "--compression", "zstd", "--linger-ms", "0", "--acks", "-1")
	if p := parsePerfLine(t, res.stdout); p.records != 500 {
		t.Fatalf("reported %d records", p.records)
	}
	if !strings.Contains(res.stderr, "already exists with 4 partitions") {
		t.Fatalf("stderr %q does not warn about the partition count", res.stderr)
	}
	if total, parts := endOffsets(t, bs, "wide"); total != 500 || parts != 4 {
		t.Fatalf("topic wide holds %d records in %d partitions", total, parts)
	}
}

func TestBenchConsumeTooFewRecordsFails(t *testing.T) {
	bs := brokertest.New(t).Addr()
	mustRun(t, "", "bench", "produce", "--bootstrap", bs, "--topic", "short", "--records", "100")
	res := runCLI(t, 30*time.Second, "", "bench", "consume", "--bootstrap", bs, "--topic", "short",
		"--records", "200", "--timeout-ms", "500")
	if res.err == nil || !strings.Contains(res.err.Error(), "consumed 100 of 200") {
		t.Fatalf("err %v, want consumed 100 of 200", res.err)
	}
	// The partial result is still printed.
	if !strings.Contains(res.stdout, ", 100, ") {
		t.Fatalf("stdout %q lacks the partial count", res.stdout)
	}
}

func TestThrottlerPaces(t *testing.T) {
	start := time.Now()
	th := throttler{perSec: 1000, start: start}
	for i := range int64(100) {
		th.wait(context.Background(), i)
	}
	// 100 records at 1000/s: the 100th is due 99 ms after the start.
	if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("100 records at 1000/s took %v", d)
	}
}

// BenchmarkBenchProduce runs `bench produce` against an in-process broker:
// 50,000 records of 100 bytes per iteration over 6 partitions, acks=1.
func BenchmarkBenchProduce(b *testing.B) {
	const records = 50000
	bs := brokertest.New(b).Addr()
	b.SetBytes(records * benchTestSize)
	for i := 0; b.Loop(); i++ {
		res := runCLI(b, time.Minute, "", "bench", "produce", "--bootstrap", bs, "--topic", "bench-"+strconv.Itoa(i),
			"--records", strconv.Itoa(records), "--record-size", strconv.Itoa(benchTestSize), "--partitions", "6")
		if res.err != nil {
			b.Fatal(res.err)
		}
	}
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestBenchProduceTransactional: bench produce --transactional-id commits
// one transaction per --txn-records, every record lands in a transactional
// batch with the bench payload, and bench consume's --isolation-level
// decides whether an aborted transaction's records count.
func TestBenchProduceTransactional(t *testing.T) {
	bs := brokertest.New(t).Addr()
	const records = 3500
	res := mustRun(t, "", "bench", "produce", "--bootstrap", bs, "--topic", "txn", "--records", strconv.Itoa(records),
		"--partitions", "2", "--acks", "-1", "--transactional-id", "bench-txn", "--txn-records", "1000")
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("transactional produce printed %q, want the perf line and the transactions line", res.stdout)
	}
	if p := parsePerfLine(t, lines[0]); p.records != records {
		t.Fatalf("reported %d records, want %d", p.records, records)
	}
	// 3,500 records at 1,000 a transaction: 3 full ones and the rest.
	if !strings.HasPrefix(lines[1], "4 transactions committed, ") {
		t.Fatalf("transactions line %q, want 4 committed", lines[1])
	}

	// What a read_committed consumer sees: every record, transactional,
	// with the bench payload.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := newPayload(benchTestSize)
	for n := 0; n < records; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if !r.Attrs.IsTransactional() || string(r.Value) != string(want) {
				t.Fatalf("record %s/%d@%d: transactional %v, value %q", r.Topic, r.Partition, r.Offset,
					r.Attrs.IsTransactional(), r.Value)
			}
			n++
		}
	}

	// An aborted transaction of 10 more records.
	tx, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.DefaultProduceTopic("txn"), kgo.TransactionalID("aborter"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("aborted")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "bench", "consume", "--bootstrap", bs, "--topic", "txn", "--records", strconv.Itoa(records+10),
		"--isolation-level", "read_uncommitted")
	res = runCLI(t, time.Minute, "", "bench", "consume", "--bootstrap", bs, "--topic", "txn",
		"--records", strconv.Itoa(records+1), "--isolation-level", "read_committed", "--timeout-ms", "2000")
	if res.err == nil || !strings.Contains(res.err.Error(), "consumed 3500 of 3501") {
		t.Fatalf("read_committed: err %v, want consumed 3500 of 3501", res.err)
	}
}

func TestBenchTransactionalBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "--transactional-id", "x", "--acks", "1"}, "--acks"},
		{[]string{"produce", "--transactional-id", "x", "--acks", "-1", "--txn-records", "0"}, "--txn-records"},
		{[]string{"consume", "--isolation-level", "committed"}, "--isolation-level"},
	} {
		args := append([]string{"bench"}, tc.args...)
		args = append(args, "--bootstrap", "127.0.0.1:1", "--topic", "t", "--records", "1")
		res := runCLI(t, 10*time.Second, "", args...)
		if res.err == nil || !strings.Contains(res.err.Error(), tc.want) {
			t.Fatalf("%v: err %v, want one naming %s", tc.args, res.err, tc.want)
		}
	}
}
