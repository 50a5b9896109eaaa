package broker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestSIGKILLKeepsAcknowledgedRecords kills the broker process while a
// producer (acks=1) is writing, restarts it on the same directories and
// checks that every acknowledged record is there, at its offset, intact.
func TestSIGKILLKeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "num.partitions": "3",
		"log.segment.bytes": "262144",
	}
	conf := writeProperties(t, props)
	p := testproc.StartBroker(t, conf)

	ctx := testenv.Context(t, 2*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation(),
		kgo.RecordRetries(0), kgo.RequestTimeoutOverhead(2*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type key struct {
		part int32
		off  int64
	}
	var mu sync.Mutex
	acked := map[key]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			val := "v" + strconv.Itoa(i) + strings.Repeat("x", i%200)
			cl.Produce(ctx, &kgo.Record{Topic: "crash", Partition: int32(i % 3), Value: []byte(val)}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[key{r.Partition, r.Offset}] = string(r.Value)
					mu.Unlock()
				}
			})
			if i%500 == 499 {
				time.Sleep(time.Millisecond) // let some requests complete one by one
			}
		}
	}()
	// Kill once a good number of records is acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 20_000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(t, syscall.SIGKILL); err == nil {
		t.Fatal("broker exited cleanly on SIGKILL?")
	}
	close(stop)
	wg.Wait()
	flushCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_ = cl.Flush(flushCtx) // outstanding records fail: the broker is gone
	cancel()
	cl.Close()
	mu.Lock()
	ackedCopy := acked
	mu.Unlock()
	if len(ackedCopy) < 1000 {
		t.Fatalf("only %d records acknowledged before the kill", len(ackedCopy))
	}

	p2 := testproc.StartBroker(t, conf)
	ctx2 := testenv.Context(t, time.Minute)
	ends := map[int32]int64{}
	for k := range ackedCopy {
		ends[k.part] = max(ends[k.part], k.off+1)
	}
	cons := newClient(t, p2.Addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"crash": {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(),
	}}))
	found := 0
	seen := map[int32]int64{0: 0, 1: 0, 2: 0}
	for found < len(ackedCopy) {
		fs := cons.PollFetches(ctx2)
		if err := fs.Err0(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after restart found %d of %d acknowledged records", found, len(ackedCopy))
			}
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != seen[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d: gap in the recovered log", r.Partition, r.Offset, seen[r.Partition])
			}
			seen[r.Partition]++
			if want, ok := ackedCopy[key{r.Partition, r.Offset}]; ok {
				if string(r.Value) != want {
					t.Fatalf("partition %d offset %d: %q, acknowledged %q", r.Partition, r.Offset, r.Value, want)
				}
				found++
			}
		})
	}
	t.Logf("%d acknowledged records all present after SIGKILL and restart", found)
	if err := p2.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, p2.Output())
	}
}

func TestBrokerCommandRejectsBadConfig(t *testing.T) {
	bin := testproc.Binary(t)
	for _, tc := range []struct {
		props map[string]string
		args  []string
		want  string
	}{
		{map[string]string{"log.dirs": t.TempDir(), "num.partitions": "abc"}, nil, "num.partitions"},
		{map[string]string{"log.dirs": t.TempDir()}, []string{"--override", "log.segment.bytes=-5"}, "log.segment.bytes"},
		{map[string]string{"num.partitions": "2"}, nil, "log.dirs"},
	} {
		args := append([]string{"broker", "--config", writeProperties(t, tc.props)}, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("%v: exit %v, want non-zero", tc.props, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Fatalf("%v: output %q, want one line naming %s", tc.props, out, tc.want)
		}
	}
	// An unknown key is a warning, not an error: the broker starts.
	p := testproc.StartBroker(t, writeProperties(t, map[string]string{
		"log.dirs": filepath.Join(t.TempDir(), "d"), "listeners": "127.0.0.1:0", "no.such.key": "1",
	}))
	if !strings.Contains(p.Output(), "no.such.key") {
		t.Fatalf("no warning for the unknown key:\n%s", p.Output())
	}
	if err := p.Stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("exit after SIGINT: %v", err)
	}
	_ = os.Remove
}
