package client

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/brokertest"
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
	// run sends one round and returns its wall time and the CPU time of
	// this process (producer and broker alike): wall time suffers from
	// whatever else the machine runs, CPU per record much less.
	run := func(p *Producer, topic string) (wall, cpu time.Duration) {
		var failed atomic.Int64
		cpu0 := processCPU(b)
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
		return time.Since(start), processCPU(b) - cpu0
	}
	// Warm both (connections, producer ids, metadata) outside the timing.
	run(off, "bench-off")
	run(on, "bench-on")
	b.ResetTimer()
	// Each iteration is a pair of rounds, one per producer, in alternating
	// order; medians over the pairs (of each figure and of the pairs'
	// ratios, which cancel drift between pairs) are what is reported.
	var offRates, onRates, rateRatios, offCPUs, onCPUs, cpuRatios []float64
	for i := 0; i < b.N; i++ {
		var offWall, offCPU, onWall, onCPU time.Duration
		if i%2 == 0 {
			offWall, offCPU = run(off, "bench-off")
			onWall, onCPU = run(on, "bench-on")
		} else {
			onWall, onCPU = run(on, "bench-on")
			offWall, offCPU = run(off, "bench-off")
		}
		offRate, onRate := round/offWall.Seconds(), round/onWall.Seconds()
		offRates, onRates = append(offRates, offRate), append(onRates, onRate)
		rateRatios = append(rateRatios, onRate/offRate)
		offPer, onPer := float64(offCPU.Nanoseconds())/round, float64(onCPU.Nanoseconds())/round
		offCPUs, onCPUs = append(offCPUs, offPer), append(onCPUs, onPer)
		cpuRatios = append(cpuRatios, onPer/offPer)
	}
	b.StopTimer()
	b.ReportMetric(median(offRates), "off-records/s")
	b.ReportMetric(median(onRates), "on-records/s")
	b.ReportMetric(median(rateRatios), "on/off")
	b.ReportMetric(median(offCPUs), "off-cpu-ns/record")
	b.ReportMetric(median(onCPUs), "on-cpu-ns/record")
	// CPU per record, audit on over off: the goal is <= 1.05.
	b.ReportMetric(median(cpuRatios), "cpu-on/off")
	b.ReportMetric(0, "ns/op")
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// processCPU is the user+system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
