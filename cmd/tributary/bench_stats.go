package main

import (
	"fmt"
	"slices"
	"time"
)

// mebibyte is the MB of Kafka's perf tools (1024*1024 bytes).
const mebibyte = 1024 * 1024

// perfResult is what kafka-producer-perf-test's final line reports.
type perfResult struct {
	records int64
	bytes   int64
	elapsed time.Duration
	avg     time.Duration
	max     time.Duration
	p50     time.Duration
	p95     time.Duration
	p99     time.Duration
	p999    time.Duration
}

// summarize computes the result from per-record latencies in nanoseconds.
// It sorts lat in place; every latency is kept (no sampling), since a bench
// run's record count bounds the memory.
func summarize(lat []int64, bytes int64, elapsed time.Duration) perfResult {
	r := perfResult{records: int64(len(lat)), bytes: bytes, elapsed: elapsed}
	if len(lat) == 0 {
		return r
	}
	slices.Sort(lat)
	var sum float64
	for _, l := range lat {
		sum += float64(l)
	}
	r.avg = time.Duration(sum / float64(len(lat)))
	r.max = time.Duration(lat[len(lat)-1])
	r.p50 = percentile(lat, 0.5)
	r.p95 = percentile(lat, 0.95)
	r.p99 = percentile(lat, 0.99)
	r.p999 = percentile(lat, 0.999)
	return r
}

// percentile uses the perf test's rule: the element at floor(n*p) of the
// sorted latencies.
func percentile(sorted []int64, p float64) time.Duration {
	i := min(int(float64(len(sorted))*p), len(sorted)-1)
	return time.Duration(sorted[i])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// String is the kafka-producer-perf-test final line. Percentiles carry two
// decimals where the Java tool prints whole milliseconds, because a local
// broker's latencies are often below one millisecond.
func (r perfResult) String() string {
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, "+
		"%.2f ms max latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.",
		r.records, perSecond(float64(r.records), r.elapsed), perSecond(float64(r.bytes)/mebibyte, r.elapsed),
		ms(r.avg), ms(r.max), ms(r.p50), ms(r.p95), ms(r.p99), ms(r.p999))
}

// consumeHeader is kafka-consumer-perf-test's header line.
const consumeHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, " +
	"rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

// perfTime formats t as the Java tool's default yyyy-MM-dd HH:mm:ss:SSS;
// Go layouts accept fractional seconds only after '.' or ',', hence by hand.
func perfTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}

// consumeResult is what kafka-consumer-perf-test reports. Without a
// consumer group there is no rebalance; its slot holds the time spent
// finding the partitions and their leaders before the first fetch, which is
// the same kind of start-up cost.
type consumeResult struct {
	start, end time.Time
	records    int64
	bytes      int64
	rebalance  time.Duration
}

func (r consumeResult) String() string {
	elapsed := r.end.Sub(r.start)
	fetch := elapsed - r.rebalance
	mb := float64(r.bytes) / mebibyte
	return fmt.Sprintf("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f",
		perfTime(r.start), perfTime(r.end),
		mb, perSecond(mb, elapsed), r.records, perSecond(float64(r.records), elapsed),
		r.rebalance.Milliseconds(), fetch.Milliseconds(),
		perSecond(mb, fetch), perSecond(float64(r.records), fetch))
}
