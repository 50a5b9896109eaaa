package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partlog"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// TestCleanerSIGKILLAtEveryStep: a broker process SIGKILLs itself (the
// TRIBUTARY_CLEANER_CRASH_AT hook) at each step of a cleaning of a
// compacted topic. Restarted without the cleaner, it serves the same key
// state as before and every offset once; restarted with it, the cleaning
// completes and the state is still the same, each key once below the
// cleaner checkpoint.
func TestCleanerSIGKILLAtEveryStep(t *testing.T) {
	connect := zktest.Chroot(t, zk(t), "cleancrash")
	for _, step := range partlog.CleanSteps {
		t.Run(step, func(t *testing.T) {
			ctx := testenv.Context(t, 3*time.Minute)
			dir := t.TempDir()
			chroot := connect + "/" + step
			port := "0"
			start := func(cleaner bool, crashAt string) *testproc.Broker {
				t.Helper()
				// SIGKILLed at a step, the process may die before it says
				// it listens: only the others are waited for.
				t.Setenv(config.CleanerCrashEnv, crashAt)
				props := testproc.WriteProperties(t, dir, "server.properties", map[string]string{
					"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:" + port, "log.dirs": filepath.Join(dir, "data"),
					"zookeeper.connect": chroot, "log.cleaner.enable": strconv.FormatBool(cleaner),
					"zookeeper.session.timeout.ms": strconv.Itoa(int(sessionTimeout.Milliseconds())),
					"log.cleaner.backoff.ms":       "50", "offsets.topic.replication.factor": "1",
				})
				if crashAt != "" {
					return testproc.Launch(t, props)
				}
				p := testproc.StartBroker(t, props)
				_, port, _ = strings.Cut(p.Addr, "127.0.0.1:")
				return p
			}
			p := start(false, "")
			const topic = "state"
			adm := kadm.NewClient(newClient(t, []string{p.Addr}))
			resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
				"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("4096"),
				"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "delete.retention.ms": kadm.StringPtr("0"),
			}, topic)
			if err != nil || resp.Err != nil {
				t.Fatalf("create: %v %v", err, resp.Err)
			}
			model := map[string]string{}
			cl := newClient(t, []string{p.Addr}, kgo.ProducerLinger(0))
			for b := 0; b < 150; b++ {
				var rs []*kgo.Record
				for j := 0; j < 10; j++ {
					k, v := fmt.Sprintf("k%d", (b*10+j)%37), fmt.Sprintf("v%d-%d", b, j)
					rec := &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)}
					if (b+j)%29 == 0 {
						rec.Value = nil
						delete(model, k)
					} else {
						model[k] = v
					}
					rs = append(rs, rec)
				}
				if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					t.Fatalf("produce: %v", err)
				}
			}
			cl.Close()
			if err := p.Stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("stop: %v", err)
			}

			// The cleaner runs and the process dies at the step.
			p = start(true, step)
			if err := p.Wait(t, time.Minute); err == nil {
				t.Fatalf("the broker exited cleanly instead of being killed at %s", step)
			}

			p = start(false, "")
			checkKeyState(t, ctx, p.Addr, topic, model, -1)
			if err := p.Stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("stop: %v", err)
			}
			p = start(true, "")
			point := awaitCleanerPast(t, filepath.Join(dir, "data", topic+"-0"), 1000)
			checkKeyState(t, ctx, p.Addr, topic, model, point)
		})
	}
}

// awaitCleanerPast waits until the partition in dir has a cleaner
// checkpoint past offset and returns it.
func awaitCleanerPast(t *testing.T, dir string, offset int64) int64 {
	t.Helper()
	var got int64
	testenv.WaitFor(t, waitTimeout, fmt.Sprintf("the cleaner checkpoint of %s past %d", dir, offset), func() (bool, string) {
		got = cleanerCheckpoint(dir)
		return got > offset, fmt.Sprint("checkpoint ", got)
	})
	return got
}

// checkKeyState consumes topic's partition 0 from the start to its end and
// checks that offsets only increase, that the last value of every key is
// the model's and, when point >= 0, that below point each key appears once.
func checkKeyState(t *testing.T, ctx context.Context, addr, topic string, model map[string]string, point int64) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, []string{addr}))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl := newClient(t, []string{addr}, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	state, below := map[string]string{}, map[string]bool{}
	last := int64(-1)
	for last < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume: %v (at %d of %d)", err, last, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			if point >= 0 && r.Offset < point {
				if below[string(r.Key)] {
					t.Fatalf("key %s twice below the cleaner checkpoint %d", r.Key, point)
				}
				below[string(r.Key)] = true
			}
			if r.Value == nil {
				delete(state, string(r.Key))
			} else {
				state[string(r.Key)] = string(r.Value)
			}
		})
	}
	if fmt.Sprint(state) != fmt.Sprint(model) {
		t.Fatalf("key state %v, want %v", state, model)
	}
}
