package network_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

const waitBound = time.Minute

func TestOptsZeroValuesAreKgoDefaults(t *testing.T) {
	cl, err := network.NewClient(network.ClientConfig{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValues(kgo.ClientID); got[1] != true || got[0] != "kgo" {
		t.Errorf("client.id = %v, want kgo's default", got)
	}
	if got := cl.OptValue(kgo.DialTimeout); got != 10*time.Second {
		t.Errorf("dial timeout = %v, want kgo's 10s", got)
	}
	if got := cl.OptValue(kgo.RequestTimeoutOverhead); got != 10*time.Second {
		t.Errorf("request timeout overhead = %v, want kgo's 10s", got)
	}
	if got := len(network.ClientConfig{}.Opts()); got != 1 {
		t.Errorf("zero config has %d options, want only the seed brokers", got)
	}
}

func TestOptsCarryEveryField(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	c := network.ClientConfig{
		Brokers:                []string{"127.0.0.1:1", "127.0.0.1:2"},
		ClientID:               "tributary-test",
		DialTimeout:            3 * time.Second,
		RequestTimeoutOverhead: 7 * time.Second,
		Logger:                 logger,
	}
	cl, err := network.NewClient(c, kgo.ClientID("overridden-by-extra"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.SeedBrokers); !equal(got.([]string), c.Brokers) {
		t.Errorf("seed brokers = %v, want %v", got, c.Brokers)
	}
	if got := cl.OptValue(kgo.ClientID); got != "overridden-by-extra" {
		t.Errorf("client.id = %v: extra options must come after the config's", got)
	}
	if got := cl.OptValue(kgo.DialTimeout); got != 3*time.Second {
		t.Errorf("dial timeout = %v", got)
	}
	if got := cl.OptValue(kgo.RequestTimeoutOverhead); got != 7*time.Second {
		t.Errorf("request timeout overhead = %v", got)
	}
	if got := cl.OptValue(kgo.WithLogger); got == nil {
		t.Error("no logger set")
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestClientSendsClientID reads the first request a client sends to a
// ListenKafka listener and checks the client.id in its header.
func TestClientSendsClientID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	ln, err := network.ListenKafka(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ids := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(waitBound))
		// Request header v1+: size, api key, version, correlation id,
		// then client.id as an int16-length string.
		var hdr [14]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			ids <- "read error: " + err.Error()
			return
		}
		id := make([]byte, binary.BigEndian.Uint16(hdr[12:]))
		if _, err := io.ReadFull(c, id); err != nil {
			ids <- "read error: " + err.Error()
			return
		}
		ids <- string(id)
	}()
	cl, err := network.NewClient(network.ClientConfig{Brokers: []string{ln.Addr().String()}, ClientID: "seam-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() { _ = cl.Ping(ctx) }()
	select {
	case id := <-ids:
		if id != "seam-test" {
			t.Fatalf("client.id on the wire = %q, want seam-test", id)
		}
	case <-ctx.Done():
		t.Fatal("no request reached the listener")
	}
}

// TestClientRoundTripThroughBroker produces and consumes through a real
// in-process broker that listens through ListenKafka, with kgo's log
// lines reaching the configured slog logger.
func TestClientRoundTripThroughBroker(t *testing.T) {
	b, err := broker.New(config.Config{
		BrokerID:               1,
		Listeners:              "PLAINTEXT://127.0.0.1:0",
		LogDirs:                []string{t.TempDir()},
		RetentionCheckInterval: time.Hour,
		NumPartitions:          1,
	}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	var logs testproc.SyncBuffer
	c := network.ClientConfig{
		Brokers:  []string{b.Addr()},
		ClientID: "round-trip",
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	prod, err := network.NewClient(c, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("seam"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := network.NewClient(c, kgo.ConsumeTopics("seam"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the produced record was not fetched in time")
		}
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "hello" {
				t.Fatalf("fetched %q, want hello", recs[0].Value)
			}
			break
		}
	}
	if out := logs.String(); !strings.Contains(out, "kgo: ") || !strings.Contains(out, "level=DEBUG") {
		t.Errorf("kgo's info lines did not reach the debug logger as debug lines:\n%.2000s", out)
	}
}

func TestKgoLoggerLevels(t *testing.T) {
	var buf testproc.SyncBuffer
	quiet := network.KgoLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if quiet.Level() != kgo.LogLevelWarn {
		t.Errorf("an info logger asks kgo for %v, want warn", quiet.Level())
	}
	quiet.Log(kgo.LogLevelWarn, "w", "k", "v")
	quiet.Log(kgo.LogLevelError, "e")
	quiet.Log(kgo.LogLevelInfo, "i")
	out := buf.String()
	for _, want := range []string{`level=WARN msg="kgo: w" k=v`, `level=ERROR msg="kgo: e"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "kgo: i") {
		t.Errorf("kgo info logged above debug:\n%s", out)
	}
	loud := network.KgoLogger(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if loud.Level() != kgo.LogLevelInfo {
		t.Errorf("a debug logger asks kgo for %v, want info", loud.Level())
	}
}
