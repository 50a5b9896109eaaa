package audit

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCounterCount is the per-record cost a tier pays: one Count.
func BenchmarkCounterCount(b *testing.B) {
	c, err := NewCounter(Config{Tier: "producer", Window: time.Minute, Interval: 100 * time.Millisecond}, &memPublisher{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	now := time.Now()
	cpu0 := cpuTime(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Count("clicks", now.Add(time.Duration(i)*time.Millisecond), 1, 100)
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	// CPU per Count, steadier than wall time on a busy machine.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
