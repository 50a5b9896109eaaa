package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/brokertest"
)

// BenchmarkProducerAuditOverhead measures the producer's throughput with
// the audit counter on and off, side by side in one run: rounds alternate
// between two producers that differ only in Audit.Disable, so drift of the
// machine hits both alike. It reports both rates and their ratio (the
// issue's goal: on/off >= 0.95).
func BenchmarkProducerAuditOverhead(b *testing.B) {
	cluster := brokertest.New(b)
	cluster.CreateTopic(b, "bench-off", 4)
	cluster.CreateTopic(b, "bench-on", 4)
	const round = 100_000
	value := make([]byte, 100)
	newP := func(disable bool) *Producer {
		p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), MaxBufferedRecords: 50_000,
			Audit: ProducerAudit{Disable: disable, Cluster: "bench", Window: time.Second, Interval: time.Second}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close(context.Background()) })
		return p
	}
	off, on := newP(true), newP(false)
	ctx := context.Background()
	// Wall time suffers from whatever else the machine runs; CPU time of
	// this process (producer and broker alike) per record is steadier.
	var offCPU, onCPU time.Duration
	run := func(p *Producer, topic string) time.Duration {
		var failed atomic.Int64
		cpu0 := processCPU(b)
		defer func() {
			if p == on {
				onCPU += processCPU(b) - cpu0
			} else {
				offCPU += processCPU(b) - cpu0
			}
		}()
		start := time.Now()
		for i := 0; i < round; i++ {
			p.SendAsync(ctx, &Message{Topic: topic, Key: fmt.Appendf(nil, "%d", i%1000), Value: value}, func(_ *Message, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d sends failed", n)
		}
		return time.Since(start)
	}
	// Warm both (connections, producer ids, metadata) outside the timing.
	run(off, "bench-off")
	run(on, "bench-on")
	offCPU, onCPU = 0, 0
	b.ResetTimer()
	var offTime, onTime time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			offTime += run(off, "bench-off")
			onTime += run(on, "bench-on")
		} else {
			onTime += run(on, "bench-on")
			offTime += run(off, "bench-off")
		}
	}
	b.StopTimer()
	offRate := float64(b.N*round) / offTime.Seconds()
	onRate := float64(b.N*round) / onTime.Seconds()
	b.ReportMetric(offRate, "off-records/s")
	b.ReportMetric(onRate, "on-records/s")
	b.ReportMetric(onRate/offRate, "on/off")
	b.ReportMetric(float64(onCPU.Nanoseconds())/float64(b.N*round), "on-cpu-ns/record")
	b.ReportMetric(float64(offCPU.Nanoseconds())/float64(b.N*round), "off-cpu-ns/record")
	// Throughput ratio by CPU cost: off CPU per record / on CPU per record.
	b.ReportMetric(float64(offCPU)/float64(onCPU), "cpu-on/off")
	b.ReportMetric(0, "ns/op")
}

// processCPU is the user+system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
