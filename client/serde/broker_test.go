package serde_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/schema/registry"
)

// newTestBroker starts an in-process broker on a free port.
func newTestBroker(t *testing.T) string {
	t.Helper()
	b, err := broker.New(broker.Config{
		BrokerID:  1,
		Listeners: "PLAINTEXT://127.0.0.1:0",
		LogDirs:   []string{t.TempDir()},
	}, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		t.Fatalf("broker start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		b.Close()
	})
	return b.Addr()
}

// TestRoundTripThroughBroker produces schema-framed records with kgo to a
// real broker, consumes them back and decodes them with the schema
// fetched by id from the registry.
func TestRoundTripThroughBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg, err := registry.New(registry.NewMemStore(), registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	client, err := serde.NewRegistryClient(serde.ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	const schemaText = `{"type":"record","name":"Event","fields":[{"name":"n","type":"long"},{"name":"msg","type":"string"}]}`
	const records = 200
	addr := newTestBroker(t)

	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	ser := serde.NewSerializer(client, serde.SerializerConfig{})
	for i := range records {
		value, err := ser.EncodeTopic(ctx, "events", schemaText, map[string]any{"n": int64(i), "msg": fmt.Sprint("event ", i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	des := serde.NewDeserializer(client)
	seen := map[int64]bool{}
	for len(seen) < records {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(seen), records)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		for _, r := range fetches.Records() {
			v, id, err := des.Decode(ctx, r.Value)
			if err != nil {
				t.Fatalf("decode offset %d: %v", r.Offset, err)
			}
			m := v.(map[string]any)
			n := m["n"].(int64)
			want := map[string]any{"n": n, "msg": fmt.Sprint("event ", n)}
			if id != 1 || !reflect.DeepEqual(m, want) || seen[n] {
				t.Fatalf("offset %d: %v (id %d), duplicate %v", r.Offset, m, id, seen[n])
			}
			seen[n] = true
		}
	}
}
