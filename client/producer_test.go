package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

func newTestProducer(t *testing.T, cfg ProducerConfig) *Producer {
	t.Helper()
	p, err := NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// readAll reads a partition from the start with plain kgo, as "key=value".
func readAll(t *testing.T, bootstrap []string, topic string, p int32, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testenv.Context(t, 30*time.Second)
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d from %s-%d: %v", len(out), n, topic, p, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%s=%s", r.Key, r.Value)) })
	}
	return out
}

// TestProducerSendForms sends through Send, SendAsync and SendFuture with
// each acks setting; keyed messages land where the Java client puts them.
func TestProducerSendForms(t *testing.T) {
	cluster, _ := newZKCluster(t)
	cluster.CreateTopic(t, "keys", 12)
	ctx := testenv.Context(t, time.Minute)
	for _, acks := range []Acks{AcksDefault, AcksNone, AcksLeader, AcksAll} {
		p := newTestProducer(t, ProducerConfig{Brokers: cluster.Addrs(), Acks: acks, Linger: time.Millisecond})
		if got, want := p.cfg.Idempotent(), acks == AcksDefault || acks == AcksAll; got != want {
			t.Errorf("acks %d: idempotent %v, want %v", acks, got, want)
		}
		key := fmt.Appendf(nil, "user-%d", acks)
		m := &Message{Topic: "keys", Key: key, Value: []byte("sync"), Headers: []Header{{"h", []byte("v")}}}
		if err := p.Send(ctx, m); err != nil {
			t.Fatalf("acks %d: Send: %v", acks, err)
		}
		if want := int32(KeyPartition(key, 12)); m.Partition != want {
			t.Fatalf("acks %d: key %s went to %d, murmur2 says %d", acks, key, m.Partition, want)
		}
		if acks != AcksNone && m.Offset < 0 {
			t.Fatalf("acks %d: no offset", acks)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		p.SendAsync(ctx, &Message{Topic: "keys", Key: key, Value: []byte("async")}, func(m *Message, err error) {
			defer wg.Done()
			if err != nil || m.Partition != int32(KeyPartition(key, 12)) {
				t.Errorf("acks %d: async: %v partition %d", acks, err, m.Partition)
			}
		})
		f := p.SendFuture(ctx, &Message{Topic: "keys", Key: key, Value: []byte("future")})
		if err := f.Wait(ctx); err != nil {
			t.Fatalf("acks %d: future: %v", acks, err)
		}
		wg.Wait()
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Each key's three messages, in order, in its murmur2 partition.
	for _, acks := range []Acks{AcksDefault, AcksNone, AcksLeader, AcksAll} {
		key := fmt.Sprintf("user-%d", acks)
		part := int32(KeyPartition([]byte(key), 12))
		var mine []string
		for _, kv := range readAll(t, cluster.Addrs(), "keys", part, countKeysIn(part)) {
			if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
				mine = append(mine, kv)
			}
		}
		want := []string{key + "=sync", key + "=async", key + "=future"}
		if fmt.Sprint(mine) != fmt.Sprint(want) {
			t.Errorf("partition %d holds %v for %s, want %v", part, mine, key, want)
		}
	}
}

// countKeysIn is how many of the four test keys hash to partition p of 12,
// times three messages each.
func countKeysIn(p int32) int {
	n := 0
	for a := range 4 {
		if int32(KeyPartition(fmt.Appendf(nil, "user-%d", a), 12)) == p {
			n += 3
		}
	}
	return n
}

// TestProducerCloseFlushes: records handed to SendAsync are all written by
// the time Close returns, in order.
func TestProducerCloseFlushes(t *testing.T) {
	cluster, _ := newZKCluster(t)
	cluster.CreateTopic(t, "flush", 1)
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Linger: time.Second, BatchBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Context(t, time.Minute)
	var failed error
	var mu sync.Mutex
	for i := range 1000 {
		p.SendAsync(ctx, &Message{Topic: "flush", Key: []byte("k"), Value: fmt.Appendf(nil, "%d", i)}, func(_ *Message, err error) {
			mu.Lock()
			failed = errors.Join(failed, err)
			mu.Unlock()
		})
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatal(failed)
	}
	got := readAll(t, cluster.Addrs(), "flush", 0, 1000)
	for i, kv := range got {
		if kv != fmt.Sprintf("k=%d", i) {
			t.Fatalf("record %d is %q", i, kv)
		}
	}
	if err := p.Send(ctx, &Message{Topic: "flush"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
}

func TestProducerBadPartitioner(t *testing.T) {
	cluster, _ := newZKCluster(t)
	cluster.CreateTopic(t, "bad", 2)
	p := newTestProducer(t, ProducerConfig{Brokers: cluster.Addrs(),
		Partitioner: PartitionerFunc(func(*Message, int) int { return 7 })})
	err := p.Send(testenv.Context(t, 30*time.Second), &Message{Topic: "bad", Value: []byte("x")})
	if !errors.Is(err, ErrBadPartition) {
		t.Fatalf("Send with partition 7 of 2: %v, want ErrBadPartition", err)
	}
}

func TestProducerConfigValidate(t *testing.T) {
	for _, c := range []ProducerConfig{
		{},
		{Brokers: []string{"h:1"}, Acks: 9},
		{Brokers: []string{"h:1"}, Compression: "brotli"},
		{Brokers: []string{"h:1"}, BatchBytes: -1},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", c, err)
		}
	}
	if err := (ProducerConfig{Brokers: []string{"h:1"}, Compression: "zstd", Acks: AcksLeader}).Validate(); err != nil {
		t.Error(err)
	}
}
