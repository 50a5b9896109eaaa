package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkConsumeGroupVsKgo reads the same records from a 12-partition
// topic of a 3-broker cluster with a one-member consumer group (registries
// on memcoord, shared with the brokers, so that the benchmark needs no
// ZooKeeper; 4 streams) and with a plain kgo consumer of all partitions;
// both report records/s. b.N is the number of full passes.
func BenchmarkConsumeGroupVsKgo(b *testing.B) {
	const partitions, records = 12, 200_000
	ce := newMemCoord(b)
	cluster := newTestCluster(b, ce)
	cluster.CreateTopic(b, "bench", partitions)
	produce(b, cluster.Addrs(), "bench", partitions, records)

	groups := 0 // b.Run calls the body more than once: every pass needs a new group
	b.Run("group", func(b *testing.B) {
		for range b.N {
			groups++
			g, err := NewGroupConsumer(context.Background(), GroupConfig{
				GroupID: fmt.Sprintf("bench-%d", groups), Brokers: cluster.Addrs(), Coordinator: ce.connect,
				AutoOffsetReset: "smallest", DisableAutoCommit: true,
			})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			streams, err := g.CreateMessageStreams(context.Background(), "bench", 4)
			if err != nil {
				b.Fatal(err)
			}
			var seen atomic.Int64
			all := make(chan struct{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			for _, s := range streams {
				go func() {
					for range s.All(ctx) {
						if seen.Add(1) == records {
							close(all)
						}
					}
				}()
			}
			select {
			case <-all:
			case <-ctx.Done():
				b.Fatalf("timed out after %d records", seen.Load())
			}
			elapsed := time.Since(start)
			cancel()
			g.Close(context.Background())
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
		}
	})
	b.Run("kgo", func(b *testing.B) {
		for range b.N {
			start := time.Now()
			offs := map[int32]kgo.Offset{}
			for p := range int32(partitions) {
				offs[p] = kgo.NewOffset().AtStart()
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addrs()...),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": offs}))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			n := 0
			for n < records {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatal("timed out")
				}
				fs.EachRecord(func(*kgo.Record) { n++ })
			}
			elapsed := time.Since(start)
			cancel()
			cl.Close()
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
		}
	})
}
