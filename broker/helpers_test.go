package broker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// testBroker is a broker serving on 127.0.0.1:0 for one test.
type testBroker struct {
	*Broker
	cfg config.Config
	reg *prometheus.Registry
}

// newTestBroker starts a broker over fresh log dirs; mutate adjusts the
// config first. It is closed when the test ends.
func newTestBroker(t testing.TB, mutate func(*config.Config), opts ...Option) *testBroker {
	t.Helper()
	cfg := config.Config{
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return startTestBroker(t, cfg, opts...)
}

// startTestBroker starts a broker on exactly cfg (for restarts).
func startTestBroker(t testing.TB, cfg config.Config, opts ...Option) *testBroker {
	t.Helper()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.DiscardHandler)
	if _, fuzzing := t.(*testing.F); !fuzzing {
		// F.Log may not be called from inside the fuzz target.
		logger = testenv.Logger(t, slog.LevelWarn)
	}
	b, err := New(cfg, logger, reg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &testBroker{Broker: b, cfg: cfg, reg: reg}
}

// newClient returns a franz-go client for the broker, closed at test end.
func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}
