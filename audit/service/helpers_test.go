package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/client"
)

// full reports whether the full sizes were asked for.
func full() bool { return os.Getenv("TRIBUTARY_FULL") == "1" }

func newKgo(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// logBuffer collects a logger's output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type testService struct {
	*Service
	reg  *prometheus.Registry
	logs *logBuffer
	stop func() // ends Run and waits for it; idempotent
}

// newService runs a Service in-process on clusters until the test ends.
func newService(t testing.TB, dir string, grace int, clusters ...Cluster) *testService {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &logBuffer{}
	svc, err := New(Config{
		Clusters: clusters, Dir: dir, Listen: "127.0.0.1:0", Grace: grace,
		Logger:     slog.New(slog.NewTextHandler(io.MultiWriter(logs), nil)),
		Registerer: reg, Gatherer: reg, PartitionRefresh: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("service run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &testService{svc, reg, logs, stop}
}

// metric returns the value of the sample of name whose labels include
// labels (0 if absent).
func (s *testService) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

// produceSpread sends n records of topic through a client.Producer with
// audit on (cluster name, window, short interval), record i timestamped in
// window i%windows from t0; it returns the acknowledged count per window.
func produceSpread(t testing.TB, addr, cluster, instance, topic string, n, windows int, t0 time.Time, window time.Duration) map[time.Time]int64 {
	t.Helper()
	p, err := client.NewProducer(client.ProducerConfig{Brokers: []string{addr}, Linger: 5 * time.Millisecond,
		MaxBufferedRecords: 50_000,
		Audit:              client.ProducerAudit{Cluster: cluster, Instance: instance, Window: window, Interval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mu sync.Mutex
	acked := map[time.Time]int64{}
	var failed error
	for i := 0; i < n; i++ {
		w := t0.Add(time.Duration(i%windows) * window)
		ts := w.Add(time.Duration(i/windows%int(window.Milliseconds())) * time.Millisecond)
		p.SendAsync(ctx, &client.Message{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", cluster, i), Timestamp: ts},
			func(_ *client.Message, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = err
					return
				}
				acked[w]++
			})
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("produce: %v", failed)
	}
	return acked
}

// consumeTier reads topic from the start of every partition of one
// cluster and counts what it received as tier; drop decides which records
// it "loses" (not counted). It returns once want records were read.
func consumeTier(t testing.TB, addr, cluster, topic, tier string, window time.Duration, want int, drop func(*kgo.Record) bool) {
	t.Helper()
	pubCl := newKgo(t, kgo.SeedBrokers(addr))
	c, err := audit.NewCounter(audit.Config{Tier: tier, Cluster: cluster, Instance: tier + "@" + cluster,
		Window: window, Interval: 200 * time.Millisecond}, audit.NewKafkaPublisher(pubCl, ""))
	if err != nil {
		t.Fatal(err)
	}
	cl := newKgo(t, kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	read := 0
	for read < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s on %s read %d of %d", tier, cluster, read, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			if drop != nil && drop(r) {
				return
			}
			c.Count(r.Topic, r.Timestamp, 1, int64(len(r.Key)+len(r.Value)))
		})
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
