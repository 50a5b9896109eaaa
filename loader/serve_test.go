package loader_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/loader"
)

// TestServe loads continuously: records produced while it serves land,
// each once, and the metrics count them.
func TestServe(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "served", n: 4000, partitions: 3, start: hourStart(), span: 2 * time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	fsys, base := filesystest.Local(t)
	reg := prometheus.NewRegistry()
	cfg := baseConfig(c, "serve", d.topic, base)
	cfg.CommitInterval, cfg.Registerer = 50*time.Millisecond, reg
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- l.Serve(serveCtx) }()

	first := d
	first.n = 1000
	c.produceDataset(t, first) // ids 0..999 (produceDataset numbers from 0)
	waitLanded(t, ctx, func() int { return len(readAll(t, fsys, base)) }, 1000)
	c.produceDataset(t, d) // ids 0..3999 again: a second copy of the first 1000
	waitLanded(t, ctx, func() int {
		n := 0
		for _, l := range readAll(t, fsys, base) {
			n += len(l)
		}
		return n
	}, 5000)
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	got := readAll(t, fsys, base)
	for i := range d.n {
		want := 1
		if i < 1000 {
			want = 2 // produced twice without an origin header: two records
		}
		if len(got[int64(i)]) != want {
			t.Fatalf("record %d landed %d times, want %d", i, len(got[int64(i)]), want)
		}
	}
	if n := counterValue(t, reg, "tributary_loader_records_total"); n != 5000 {
		t.Errorf("records_total = %v, want 5000", n)
	}
}

func waitLanded(t *testing.T, ctx context.Context, count func() int, want int) {
	t.Helper()
	for {
		n := count()
		if n == want {
			return
		}
		if n > want {
			t.Fatalf("%d records landed, want %d", n, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("only %d of %d records landed", n, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// counterValue reads a registered counter.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// TestRegistryDown: with the registry unreachable the run fails, saying
// so, and commits nothing; the next run with the registry back loads every
// record once.
func TestRegistryDown(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "noreg", n: 500, partitions: 2, start: hourStart(), span: time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	fsys, base := filesystest.Local(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	cfg := baseConfig(c, "noreg", d.topic, base)
	cfg.RegistryURL = down.URL
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Run(ctx)
	l.Close()
	if err == nil || !strings.Contains(err.Error(), "schema registry") {
		t.Fatalf("run without a registry: %v, want an error naming the schema registry", err)
	}
	if got := readAll(t, fsys, base); len(got) != 0 {
		t.Fatalf("%d records landed from a failed run", len(got))
	}
	runChild(t, baseConfig(c, "noreg", d.topic, base))
	checkExactlyOnce(t, d, readAll(t, fsys, base))
}

// TestNoMatchingTopic: a topics expression that matches no topic fails Run
// with ErrNoTopics naming the expression and the topics there are (it used
// to load nothing and succeed); Serve warns every cycle and loads the
// topic once it exists.
func TestNoMatchingTopic(t *testing.T) {
	c := newCluster(t)
	c.CreateTopic(t, "other", 1)
	fsys, base := filesystest.Local(t)
	logs := &syncWriter{w: &bytes.Buffer{}}
	cfg := baseConfig(c, "late", "late-.*", base)
	cfg.CommitInterval = 50 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Run(ctx)
	if !errors.Is(err, loader.ErrNoTopics) || !strings.Contains(err.Error(), `topics="late-.*"`) || !strings.Contains(err.Error(), "the cluster has other") {
		t.Fatalf("Run: %v, want ErrNoTopics naming the expression and the topic other", err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- l.Serve(serveCtx) }()
	warnings := func() int {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return strings.Count(logs.w.String(), `level=WARN msg="nothing to load; checking again next cycle"`)
	}
	for warnings() < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d warnings; logs:\n%s", warnings(), logs.w.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	d := dataset{topic: "late-one", n: 50, partitions: 1, start: hourStart(), span: time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	waitLanded(t, ctx, func() int { return len(readAll(t, fsys, base)) }, d.n)
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if strings.Contains(logs.w.String(), "level=ERROR") {
		t.Errorf("an error logged for a topic not there yet:\n%s", logs.w.String())
	}
}
