package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perfLineRE matches the kafka-producer-perf-test final line as bench
// prints it.
var perfLineRE = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ` +
	`([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ` +
	`([\d.]+) ms 99th, ([\d.]+) ms 99.9th\.$`)

// parsedPerf is a perf line read back as numbers.
type parsedPerf struct {
	records                                   int64
	recPerSec, mbPerSec                       float64
	avgMs, maxMs, p50Ms, p95Ms, p99Ms, p999Ms float64
}

func parsePerfLine(t *testing.T, line string) parsedPerf {
	t.Helper()
	m := perfLineRE.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("line %q is not in kafka-producer-perf-test shape", line)
	}
	f := func(i int) float64 {
		v, err := strconv.ParseFloat(m[i], 64)
		if err != nil {
			t.Fatalf("field %d of %q: %v", i, line, err)
		}
		return v
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return parsedPerf{n, f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9)}
}

// consumeLineRE matches kafka-consumer-perf-test's data line.
var consumeLineRE = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), ` +
	`([\d.]+), ([\d.]+), (\d+), ([\d.]+), (\d+), (\d+), ([\d.]+), ([\d.]+)$`)

func TestSummarizePercentiles(t *testing.T) {
	// 1000 latencies of 1..1000 ms, shuffled.
	lat := make([]int64, 1000)
	for i := range lat {
		lat[(i*7919)%1000] = int64(i+1) * int64(time.Millisecond)
	}
	r := summarize(lat, 1000*100, 2*time.Second)
	want := perfResult{
		records: 1000, bytes: 100000, elapsed: 2 * time.Second,
		avg: 500500 * time.Microsecond, max: 1000 * time.Millisecond,
		p50: 501 * time.Millisecond, p95: 951 * time.Millisecond,
		p99: 991 * time.Millisecond, p999: 1000 * time.Millisecond,
	}
	if r != want {
		t.Fatalf("summarize = %+v\nwant        %+v", r, want)
	}
}

func TestPerfLineShape(t *testing.T) {
	r := perfResult{
		records: 1000000, bytes: 100000000, elapsed: 4 * time.Second,
		avg: 1234567, max: 45 * time.Millisecond,
		p50: 800 * time.Microsecond, p95: 2 * time.Millisecond,
		p99: 3500 * time.Microsecond, p999: 10 * time.Millisecond,
	}
	want := "1000000 records sent, 250000.0 records/sec (23.84 MB/sec), 1.23 ms avg latency, " +
		"45.00 ms max latency, 0.80 ms 50th, 2.00 ms 95th, 3.50 ms 99th, 10.00 ms 99.9th."
	if got := r.String(); got != want {
		t.Fatalf("perf line\n got %q\nwant %q", got, want)
	}
	p := parsePerfLine(t, r.String())
	if p.records != 1000000 || p.recPerSec != 250000 || p.p99Ms != 3.5 {
		t.Fatalf("parsed %+v", p)
	}
}

func TestEmptySummaryPrints(t *testing.T) {
	r := summarize(nil, 0, 0)
	if got := r.String(); !strings.HasPrefix(got, "0 records sent, 0.0 records/sec") {
		t.Fatalf("empty result line %q", got)
	}
}

func TestConsumeLineShape(t *testing.T) {
	start := time.Date(2024, 3, 1, 10, 0, 0, 5*int(time.Millisecond), time.Local)
	r := consumeResult{
		start: start, end: start.Add(2 * time.Second),
		records: 1000000, bytes: 100 * mebibyte, rebalance: 400 * time.Millisecond,
	}
	want := "2024-03-01 10:00:00:005, 2024-03-01 10:00:02:005, 100.0000, 50.0000, 1000000, 500000.0000, " +
		"400, 1600, 62.5000, 625000.0000"
	if got := r.String(); got != want {
		t.Fatalf("consume line\n got %q\nwant %q", got, want)
	}
	if !consumeLineRE.MatchString(r.String()) {
		t.Fatalf("consume line does not match its own pattern")
	}
	if got := strings.Count(consumeHeader, ",") + 1; got != 10 {
		t.Fatalf("header has %d columns, want 10", got)
	}
}

func TestPayloadIsLetters(t *testing.T) {
	p := newPayload(1000)
	if len(p) != 1000 {
		t.Fatalf("payload length %d", len(p))
	}
	seen := map[byte]bool{}
	for _, c := range p {
		if c < 'A' || c > 'Z' {
			t.Fatalf("payload byte %q is not an upper-case letter", c)
		}
		seen[c] = true
	}
	if len(seen) < 20 {
		t.Fatalf("payload uses only %d letters: %s", len(seen), fmt.Sprint(seen))
	}
}
