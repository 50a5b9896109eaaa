package serde_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/registrytest"
)

// TestRoundTripThroughBroker produces schema-framed records with kgo to a
// real broker, consumes them back and decodes them with the schema
// fetched by id from the registry.
func TestRoundTripThroughBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := serde.NewRegistryClient(serde.ClientConfig{URL: registrytest.Serve(t)})
	if err != nil {
		t.Fatal(err)
	}
	const schemaText = `{"type":"record","name":"Event","fields":[{"name":"n","type":"long"},{"name":"msg","type":"string"}]}`
	const records = 200
	b := brokertest.New(t)

	producer := b.Client(t, kgo.AllowAutoTopicCreation())
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

	consumer := b.Client(t, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
