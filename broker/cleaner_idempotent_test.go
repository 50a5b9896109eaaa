package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// sequenceLogger records what franz-go logs about sequence numbers and
// producer ids: an idempotent producer that hits OUT_OF_ORDER_SEQUENCE_NUMBER
// or DUPLICATE_SEQUENCE_NUMBER says so at warn or error level, even when it
// recovers on its own by resetting its producer id.
type sequenceLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *sequenceLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l *sequenceLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	line := fmt.Sprint(append([]any{level, " ", msg, " "}, keyvals...)...)
	up := strings.ToUpper(line)
	if strings.Contains(up, "SEQUENCE") || strings.Contains(up, "PRODUCER ID") || strings.Contains(up, "DATA LOSS") {
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
	}
}

func (l *sequenceLogger) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// cleanerCounter is tributary_log_cleaner_cleanings_total of b.
func cleanerCounter(t *testing.T, b *testBroker) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tributary_log_cleaner_cleanings_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestIdempotentProducerAcrossCleaning: a franz-go idempotent producer
// (acks=all) produces keyed records without pause into a compacted topic of
// small segments while the cleaner rewrites the partition several times
// under it (six cleanings). No produce may fail, franz-go may never see a sequence error
// nor reset its producer id (it does so silently on OUT_OF_ORDER_SEQUENCE
// unless told to stop), every record is acknowledged at its own offset in
// the order produced, and once the cleaner has caught up, reading from the
// beginning yields, below the cleaner checkpoint, exactly the last record of
// each key below it, and from the checkpoint on every produced record once,
// in order.
func TestIdempotentProducerAcrossCleaning(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.Cleaner.Backoff = 10 * time.Millisecond })
	ctx := testenv.Context(t, 120*time.Second)
	const topic = "state"
	adm := kadm.NewClient(newClient(t, b.Addr()))
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("8192"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}

	logs := &sequenceLogger{}
	var lossMu sync.Mutex
	var losses []string
	prod := newClient(t, b.Addr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(2000), kgo.WithLogger(logs),
		kgo.StopProducerOnDataLossDetected(),
		kgo.ProducerOnDataLossDetected(func(topic string, p int32) {
			lossMu.Lock()
			losses = append(losses, fmt.Sprintf("%s-%d", topic, p))
			lossMu.Unlock()
		}))

	// The model: what each offset holds, filled in by the promises.
	type produced struct {
		n     int // the key and value are those of record n
		pid   int64
		epoch int16
	}
	var mu sync.Mutex
	model := map[int64]produced{}
	var produceErrs []error
	const keys = 60
	value := strings.Repeat("v", 80)
	keyOf := func(n int) string { return fmt.Sprintf("key-%03d", n%keys) }
	valueOf := func(n int) string { return fmt.Sprintf("%s-%d", value, n) }

	before := cleanerCounter(t, b)
	stop := make(chan struct{})
	done := make(chan int)
	// The producer stays at most perCleaning records ahead of the cleanings
	// done: unpaced, a fast producer makes each cleaning longer than the
	// last, and a busy machine then sees only a few in the time allowed.
	const perCleaning = 3000
	var cleaned atomic.Int64
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if n >= perCleaning*int(cleaned.Load()+1) {
				select {
				case <-stop:
				case <-time.After(5 * time.Millisecond):
				}
				continue
			}
			i := n
			prod.Produce(ctx, &kgo.Record{Key: []byte(keyOf(i)), Value: []byte(valueOf(i))}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					produceErrs = append(produceErrs, err)
					return
				}
				model[r.Offset] = produced{n: i, pid: r.ProducerID, epoch: r.ProducerEpoch}
			})
			n++
		}
	}()
	// Several cleanings while the producer goes on, bounded.
	const cleanings = 6
	for {
		c := cleanerCounter(t, b) - before
		cleaned.Store(int64(c))
		if c >= cleanings {
			break
		}
		mu.Lock()
		failed := len(produceErrs) > 0
		mu.Unlock()
		if failed {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("only %v cleanings while producing", cleanerCounter(t, b)-before)
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(stop)
	sent := <-done
	if err := prod.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, err := range produceErrs {
		if i < 5 {
			t.Errorf("produce error: %v", err)
		}
	}
	if len(produceErrs) > 0 {
		t.Fatalf("%d of %d produces failed", len(produceErrs), sent)
	}
	if l := logs.seen(); len(l) > 0 {
		t.Fatalf("franz-go logged %d sequence/producer-id warnings, first: %s", len(l), l[0])
	}
	lossMu.Lock()
	if len(losses) > 0 {
		t.Fatalf("franz-go detected data loss on %v", losses)
	}
	lossMu.Unlock()
	if len(model) != sent {
		t.Fatalf("%d records acknowledged at %d distinct offsets: an offset was handed out twice", sent, len(model))
	}
	end := int64(sent)
	first := model[0]
	for off := int64(0); off < end; off++ {
		r, ok := model[off]
		if !ok {
			t.Fatalf("no record acknowledged at offset %d of [0, %d)", off, end)
		}
		if r.n != int(off) {
			t.Fatalf("record %d acknowledged at offset %d: written out of order", r.n, off)
		}
		if r.pid != first.pid || r.epoch != first.epoch {
			t.Fatalf("offset %d written by producer %d epoch %d, offset 0 by %d epoch %d: the producer id was reset",
				off, r.pid, r.epoch, first.pid, first.epoch)
		}
	}
	t.Logf("%d records over %d keys acknowledged across %v cleanings", sent, keys, cleanerCounter(t, b)-before)

	// The producer has stopped: wait until the cleaner has cleaned every
	// sealed segment, so that no pass is under way while we read (a pass
	// swaps its groups in before it moves the checkpoint).
	for !cleanerIdle(t, b) {
		select {
		case <-ctx.Done():
			t.Fatalf("the cleaner has not caught up with the stopped producer (checkpoint %d)", cleanerPoint(b))
		case <-time.After(20 * time.Millisecond):
		}
	}
	for {
		point := cleanerPoint(b)
		got := consumeRecords(t, b.Addr(), topic, end)
		if cleanerPoint(b) != point {
			continue // a cleaning finished during the read
		}
		if point == 0 {
			t.Fatal("cleaner checkpoint 0 after cleanings")
		}
		lastBelow := map[string]int64{}
		for off := int64(0); off < point; off++ {
			lastBelow[keyOf(model[off].n)] = off
		}
		var want []int64
		for off := int64(0); off < end; off++ {
			if off >= point || lastBelow[keyOf(model[off].n)] == off {
				want = append(want, off)
			}
		}
		for i := 0; i < max(len(got), len(want)); i++ {
			if i >= len(got) || i >= len(want) || got[i].Offset != want[i] {
				t.Fatalf("read %d records, want %d (checkpoint %d); first difference at #%d: %s",
					len(got), len(want), point, i, describeAt(got, want, i))
			}
			if r, n := got[i], model[want[i]].n; string(r.Key) != keyOf(n) || string(r.Value) != valueOf(n) {
				t.Fatalf("offset %d holds %s=%q, produced %s=%q", r.Offset, r.Key, r.Value, keyOf(n), valueOf(n))
			}
		}
		t.Logf("checkpoint %d: read %d of %d records", point, len(got), end)
		return
	}
}

// cleanerIdle: no partition of b has a dirty byte left to clean.
func cleanerIdle(t *testing.T, b *testBroker) bool {
	t.Helper()
	for _, p := range b.partitions.All() {
		c, err := p.Log().(cleanableLog).Cleanable()
		if err != nil {
			t.Fatalf("Cleanable: %v", err)
		}
		if c.DirtyBytes > 0 {
			return false
		}
	}
	return true
}

func cleanerPoint(b *testBroker) int64 {
	var point int64
	for _, p := range b.partitions.All() {
		point = p.Log().(interface{ CleanerCheckpoint() int64 }).CleanerCheckpoint()
	}
	return point
}

func describeAt(got []*kgo.Record, want []int64, i int) string {
	g, w := "none", "none"
	if i < len(got) {
		g = fmt.Sprint(got[i].Offset)
	}
	if i < len(want) {
		w = fmt.Sprint(want[i])
	}
	return "read offset " + g + ", want offset " + w
}

// consumeRecords reads partition 0 of topic from the start up to end.
func consumeRecords(t *testing.T, addr, topic string, end int64) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			done = done || r.Offset == end-1
		})
		if done {
			return out
		}
	}
}
