package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment of a consumer child process (the test binary re-executed).
const (
	envChild        = "CLIENT_TEST_CHILD"
	envChildZK      = "CLIENT_TEST_CHILD_ZK"
	envChildGroup   = "CLIENT_TEST_CHILD_GROUP"
	envChildTopic   = "CLIENT_TEST_CHILD_TOPIC"
	envChildID      = "CLIENT_TEST_CHILD_ID"
	envChildOut     = "CLIENT_TEST_CHILD_OUT"
	envChildSession = "CLIENT_TEST_CHILD_SESSION_MS"
)

const childStreams = 3

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "consumer" {
		os.Exit(runConsumerChild())
	}
	os.Exit(m.Run())
}

// runConsumerChild is a group member in its own process, configured as a
// Kafka 0.8 consumer is, with zookeeper.connect only: it finds the brokers
// in /brokers/ids and the partitions in /brokers/topics. Every message is
// written to <out>.<stream> ("partition offset value" lines) with one
// unbuffered write inside the loop body, so that what the file shows was
// handled before its offset could be committed. SIGTERM closes cleanly.
func runConsumerChild() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sessionMs, _ := strconv.Atoi(os.Getenv(envChildSession))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := NewGroupConsumer(ctx, GroupConfig{
		GroupID:                 os.Getenv(envChildGroup),
		ConsumerID:              os.Getenv(envChildID),
		ZooKeeperConnect:        os.Getenv(envChildZK),
		ZooKeeperSessionTimeout: time.Duration(sessionMs) * time.Millisecond,
		AutoOffsetReset:         "smallest",
		AutoCommitInterval:      200 * time.Millisecond,
		RebalanceBackoff:        300 * time.Millisecond,
		RebalanceMaxRetries:     10,
		Logger:                  logger,
	})
	if err != nil {
		logger.Error("child: new group consumer", "err", err)
		return 2
	}
	streams, err := g.CreateMessageStreams(ctx, os.Getenv(envChildTopic), childStreams)
	if err != nil {
		logger.Error("child: create streams", "err", err)
		return 2
	}
	var wg sync.WaitGroup
	for i, s := range streams {
		f, err := os.Create(fmt.Sprintf("%s.%d", os.Getenv(envChildOut), i))
		if err != nil {
			logger.Error("child: output", "err", err)
			return 2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var line []byte
			for m := range s.Messages() {
				line = fmt.Appendf(line[:0], "%d %d %s\n", m.Partition, m.Offset, m.Value)
				if _, err := f.Write(line); err != nil {
					logger.Error("child: write", "err", err)
					os.Exit(3)
				}
			}
			f.Close()
		}()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer closeCancel()
	if err := g.Close(closeCtx); err != nil {
		logger.Error("child: close", "err", err)
		return 4
	}
	wg.Wait()
	return 0
}

// consumerChild is a running child process.
type consumerChild struct {
	id     string
	out    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, set before exited closes
}

// startConsumerChild re-executes the test binary as a group member.
func startConsumerChild(t *testing.T, id, zk, group, topic string, session time.Duration) *consumerChild {
	t.Helper()
	out := filepath.Join(t.TempDir(), id)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"=consumer",
		envChildZK+"="+zk,
		envChildGroup+"="+group,
		envChildTopic+"="+topic,
		envChildID+"="+id,
		envChildOut+"="+out,
		envChildSession+"="+strconv.Itoa(int(session.Milliseconds())),
	)
	stderr, err := os.Create(out + ".stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", id, err)
	}
	c := &consumerChild{id: id, out: out, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		stderr.Close()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			if b, err := os.ReadFile(out + ".stderr"); err == nil {
				t.Logf("child %s stderr (tail):\n%s", id, tail(b, 3000))
			}
		}
	})
	return c
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// stop sends SIGTERM and waits for a clean exit.
func (c *consumerChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal %s: %v", c.id, err)
	}
	select {
	case <-c.exited:
		if c.err != nil {
			t.Fatalf("child %s exited: %v", c.id, c.err)
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("child %s did not exit within 45s of SIGTERM", c.id)
	}
}
