package audit

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
)

// newBroker starts a single-node in-process broker (auto-create on) and
// returns its address; it closes when the test ends.
func newBroker(t testing.TB) string {
	t.Helper()
	b, err := broker.New(broker.Config{
		BrokerID:               1,
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
		NumPartitions:          2,
	}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		b.Close()
	})
	return b.Addr()
}

func newClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
