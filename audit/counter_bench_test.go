package audit

import (
	"context"
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
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Count("clicks", now.Add(time.Duration(i)*time.Millisecond), 1, 100)
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
