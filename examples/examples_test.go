// Package examples_test compiles the example programs and runs them as
// separate processes against a broker process and the test ZooKeeper.
package examples_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/internal/testenv"
)

const envBrokerDir = "EXAMPLES_TEST_BROKER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envBrokerDir); dir != "" {
		os.Exit(runBroker(dir))
	}
	os.Exit(m.Run())
}

// runBroker is the broker child: it prints "ADDR host:port" once serving
// and stops on SIGTERM.
func runBroker(dir string) int {
	b, err := broker.New(broker.Config{
		Listeners:     "PLAINTEXT://127.0.0.1:0",
		LogDirs:       []string{dir},
		NumPartitions: 3,
	}, slog.New(slog.NewTextHandler(os.Stderr, nil)), prometheus.NewRegistry())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := b.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", b.Addr())
	<-ctx.Done()
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startBroker runs the broker child and returns its address.
func startBroker(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBrokerDir+"="+t.TempDir())
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("broker child did not stop within 20s of SIGTERM")
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("broker child did not report its address within 30s")
	}
	return ""
}

// build compiles an example into a temporary directory.
func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "./"+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./%s: %v\n%s", pkg, err, out)
	}
	return bin
}

// createTopic creates a topic through the Kafka API (CreateTopics).
func createTopic(ctx context.Context, t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// TestProducerAndConsumerGroupExamples: the producer example writes 50
// keyed messages; the consumer-group example, coordinated through the real
// ZooKeeper, prints all of them, each in the partition its key hashes to.
func TestProducerAndConsumerGroupExamples(t *testing.T) {
	zk := fmt.Sprintf("%s/examples-test-%016x", testenv.ZooKeeper(t), rand.Uint64())
	producer, consumer := build(t, "producer"), build(t, "consumergroup")
	addr := startBroker(t)
	const n = 50

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopic(ctx, t, addr, "events", 3)
	out, err := exec.CommandContext(ctx, producer, "--bootstrap", addr, "--topic", "events", "--count", fmt.Sprint(n)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("sent %d messages to events", n)) {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, consumer, "--bootstrap", addr, "--zookeeper", zk, "--group", "printers",
		"--topic", "events", "--streams", "2", "--count", fmt.Sprint(n))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("consumergroup: %v\nstderr:\n%s", err, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var p, off int
		var key, value string
		if _, err := fmt.Sscanf(line, "%d %d %s %s", &p, &off, &key, &value); err != nil {
			t.Fatalf("consumergroup printed %q: %v", line, err)
		}
		if want := client.KeyPartition([]byte(key), 3); p != want {
			t.Errorf("%s came from partition %d, murmur2 says %d", key, p, want)
		}
		got[key] = value
	}
	for i := range n {
		k := fmt.Sprintf("key-%d", i)
		if got[k] != fmt.Sprintf("message-%d", i) {
			t.Errorf("%s: printed value %q", k, got[k])
		}
	}
	if len(got) != n {
		t.Errorf("printed %d distinct keys, want %d", len(got), n)
	}
}
