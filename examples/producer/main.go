// Command producer sends numbered, keyed messages to a topic with the
// Tributary client: keys are partitioned as the Java client would.
//
//	producer --bootstrap 127.0.0.1:9092 --topic events --count 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tributary/tributary/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run() error {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "comma-separated broker host:port list")
	topic := flag.String("topic", "events", "topic to write")
	count := flag.Int("count", 10, "number of messages")
	flag.Parse()
	if *count < 0 {
		return fmt.Errorf("--count must be >= 0")
	}
	p, err := client.NewProducer(client.ProducerConfig{Brokers: strings.Split(*bootstrap, ",")})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range *count {
		m := &client.Message{
			Topic: *topic,
			Key:   fmt.Appendf(nil, "key-%d", i),
			Value: fmt.Appendf(nil, "message-%d", i),
		}
		// Asynchronous: Close below waits for every acknowledgement.
		p.SendAsync(ctx, m, func(m *client.Message, err error) {
			if err != nil {
				fmt.Fprintf(os.Stderr, "producer: %s: %v\n", m.Key, err)
				os.Exit(1)
			}
		})
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	fmt.Printf("sent %d messages to %s\n", *count, *topic)
	return nil
}
