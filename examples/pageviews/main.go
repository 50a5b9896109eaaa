// Command pageviews produces Avro page-view events, the example traffic of
// `tributary pipeline`: the schema (package pipeline/pageview) is registered
// in the schema registry under "<topic>-value", each value carries the
// Confluent framing (0x00, 4-byte schema id, Avro binary) and each record's
// timestamp is the event's own time, which is what audit windows and the
// loader's hourly directories go by. Keys are user ids, so one user's views
// stay in one partition.
//
//	pageviews --bootstrap 127.0.0.1:9092 --registry http://127.0.0.1:8081 --count 1000 --rate 200
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/pipeline/pageview"
	"github.com/tributary/tributary/schema"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pageviews:", err)
		os.Exit(1)
	}
}

func run() error {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "comma-separated broker host:port list")
	registryURL := flag.String("registry", "http://127.0.0.1:8081", "schema registry URL")
	topic := flag.String("topic", pageview.Topic, "topic to write")
	dc := flag.String("datacenter", "dc1", "datacenter name written into each event")
	count := flag.Int64("count", 100, "number of events (0: until interrupted)")
	rate := flag.Float64("rate", 100, "events per second (0: as fast as possible)")
	flag.Parse()
	if *count < 0 || *rate < 0 {
		return fmt.Errorf("--count and --rate must be >= 0")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	reg, err := serde.NewRegistryClient(serde.ClientConfig{URL: *registryURL})
	if err != nil {
		return err
	}
	ser := serde.NewSerializer(reg, serde.SerializerConfig{})
	p, err := client.NewProducer(client.ProducerConfig{Brokers: strings.Split(*bootstrap, ",")})
	if err != nil {
		return err
	}
	producer := pageview.NewProducerID(*dc)
	var failed atomic.Int64
	var schemaID schema.ID
	start := time.Now()
	var seq int64
	for ; *count == 0 || seq < *count; seq++ {
		if *rate > 0 {
			// Pace by the clock, not by sleeping a fixed gap per event.
			if wait := time.Until(start.Add(time.Duration(float64(seq) / *rate * float64(time.Second)))); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		event := pageview.Event(*dc, producer, seq, time.Now())
		value, err := ser.EncodeTopic(ctx, *topic, pageview.Schema, event)
		if err != nil {
			return err
		}
		if schemaID == 0 {
			schemaID, _, _ = schema.Parse(value)
		}
		m := &client.Message{
			Topic:     *topic,
			Key:       []byte(event["user"].(string)),
			Value:     value,
			Timestamp: event["timestamp"].(time.Time),
		}
		p.SendAsync(context.Background(), m, func(m *client.Message, err error) {
			if err != nil {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "pageviews: %s: %v\n", m.Key, err)
			}
		})
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Close(cctx); err != nil {
		return err
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %d events failed", n, seq)
	}
	fmt.Printf("sent %d page views to %s as %s (schema id %d)\n", seq, *topic, producer, schemaID)
	return nil
}
