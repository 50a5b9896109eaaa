// Command consumergroup joins a ZooKeeper-coordinated consumer group and
// prints every message it is handed as "partition offset key value",
// committing as it goes; it exits after --count messages (0: on SIGINT).
//
//	consumergroup --bootstrap 127.0.0.1:9092 --zookeeper 127.0.0.1:2181/tributary \
//	    --group printers --topic events --streams 2 --count 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tributary/tributary/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "consumergroup:", err)
		os.Exit(1)
	}
}

func run() error {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "comma-separated broker host:port list")
	zk := flag.String("zookeeper", "127.0.0.1:2181", "zookeeper.connect, with optional /chroot")
	group := flag.String("group", "printers", "group.id")
	topic := flag.String("topic", "events", "topic to read")
	streams := flag.Int("streams", 2, "message streams (goroutines)")
	count := flag.Int64("count", 0, "exit after this many messages (0: run until SIGINT/SIGTERM)")
	reset := flag.String("offset-reset", "smallest", "auto.offset.reset: smallest or largest")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	joinCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	g, err := client.NewGroupConsumer(joinCtx, client.GroupConfig{
		GroupID:            *group,
		Brokers:            strings.Split(*bootstrap, ","),
		ZooKeeperConnect:   *zk,
		AutoOffsetReset:    *reset,
		AutoCommitInterval: time.Second,
	})
	if err != nil {
		return err
	}
	ss, err := g.CreateMessageStreams(joinCtx, *topic, *streams)
	if err != nil {
		g.Close(context.Background())
		return err
	}
	var (
		mu   sync.Mutex // one line at a time on stdout
		seen atomic.Int64
		wg   sync.WaitGroup
	)
	enough, finish := context.WithCancel(ctx)
	defer finish()
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m, err := range s.All(enough) {
				if err != nil {
					if enough.Err() == nil {
						fmt.Fprintln(os.Stderr, "consumergroup:", err)
					}
					continue
				}
				mu.Lock()
				fmt.Printf("%d %d %s %s\n", m.Partition, m.Offset, m.Key, m.Value)
				mu.Unlock()
				if n := seen.Add(1); *count > 0 && n >= *count {
					finish()
				}
			}
		}()
	}
	wg.Wait()
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer closeCancel()
	// Close commits what was printed, so a restart continues after it.
	return g.Close(closeCtx)
}
