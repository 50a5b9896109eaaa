package clustertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// Records of the round trip: a scaled run by default; TRIBUTARY_FULL=1
// gives the ZooKeeper cluster the million. In-process brokers share
// this test process's CPU under the race detector, so they carry fewer.
var processRecords, inProcessRecords = func() (int, int) {
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		return 1_000_000, 300_000
	}
	return 200_000, 100_000
}()

// controllerSlack is what the issue allows beyond the session timeout for
// a new controller to be elected.
const controllerSlack = 2 * time.Second

type backend struct {
	name    string
	records int
	start   func(t *testing.T) testCluster
}

var backends = []backend{
	{"zookeeper", processRecords, func(t *testing.T) testCluster { return newProcCluster(t, zktest.Chroot(t, zk(t), "clustertest"), 3) }},
	{"memcoord", inProcessRecords, func(t *testing.T) testCluster { return newMemCluster(t, 3) }},
}

func forEachBackend(t *testing.T, body func(t *testing.T, b backend, c testCluster)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { body(t, b, b.start(t)) })
	}
}

// TestRoundTrip: 3 brokers, a 12-partition topic with 4 leaders on each,
// every broker describing the same cluster, and records produced with
// franz-go read back with their content.
func TestRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, c testCluster) {
		ctx := testenv.Context(t, 10*time.Minute)
		addrs := bootstrap(c, 3)
		td := kafkatest.CreateTopic(t, addrs, "events", 12, nil)
		perBroker := map[int32]int{}
		for _, l := range leadersOf(td) {
			perBroker[l]++
		}
		if len(perBroker) != 3 || perBroker[1] != 4 || perBroker[2] != 4 || perBroker[3] != 4 {
			t.Fatalf("leaders per broker %v, want 4 on each of 1, 2, 3", perBroker)
		}
		for _, a := range addrs {
			// Each broker learns the partition states from ZooKeeper in its
			// own time: createTopic waited for the first one only.
			var md kadm.Metadata
			testenv.WaitFor(t, waitTimeout, "broker "+a+" to see a leader of every partition", func() (bool, string) {
				md = metadata(t, ctx, a, "events")
				td := md.Topics["events"]
				if len(td.Partitions) != 12 {
					return false, ""
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 {
						return false, ""
					}
				}
				return true, ""
			})
			if ids := md.Brokers.NodeIDs(); len(ids) != 3 {
				t.Fatalf("broker %s lists brokers %v, want 3", a, ids)
			}
			for p, l := range leadersOf(md.Topics["events"]) {
				if l != leadersOf(td)[p] {
					t.Fatalf("broker %s: partition %d led by %d, another broker says %d", a, p, l, leadersOf(td)[p])
				}
			}
		}

		cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(50_000))
		start := time.Now()
		produce(t, ctx, cl, "events", 0, b.records, 12, nil)
		took := time.Since(start)
		t.Logf("produced %d records in %v (%.0f records/s)", b.records, took.Round(time.Millisecond), float64(b.records)/took.Seconds())
		want := map[int32][]int{}
		expected(want, 0, b.records, 12, nil)
		start = time.Now()
		consumeCheck(t, ctx, addrs, "events", want)
		took = time.Since(start)
		t.Logf("consumed and checked %d records in %v (%.0f records/s)", b.records, took.Round(time.Millisecond), float64(b.records)/took.Seconds())
	})
}

// TestBrokerCrash: a crashed broker's partitions become unavailable
// (LEADER_NOT_AVAILABLE, leader -1) once its session is gone while the
// others keep serving; restarted, it serves all its data again.
func TestBrokerCrash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, c testCluster) {
		ctx := testenv.Context(t, 5*time.Minute)
		addrs := bootstrap(c, 3)
		const topic, parts = "crash", 12
		leaders := leadersOf(kafkatest.CreateTopic(t, addrs, topic, parts, nil))
		cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		produce(t, ctx, cl, topic, 0, 12_000, parts, nil)
		want := map[int32][]int{}
		expected(want, 0, 12_000, parts, nil)

		const victim = int32(2)
		victimParts, others := map[int32]bool{}, map[int32]bool{}
		for p, l := range leaders {
			if l == victim {
				victimParts[p] = true
			} else {
				others[p] = true
			}
		}
		c.crash(t, victim)
		live := bootstrap(c, 3)
		took := testenv.WaitFor(t, c.expiry()+15*time.Second, "the crashed broker's partitions going unavailable", func() (bool, string) {
			md := metadata(t, ctx, live[0], topic)
			for _, id := range md.Brokers.NodeIDs() {
				if id == victim {
					return false, ""
				}
			}
			for p, d := range md.Topics[topic].Partitions {
				if victimParts[p] != (d.Leader == -1 && errors.Is(d.Err, kerr.LeaderNotAvailable)) {
					return false, ""
				}
				if !victimParts[p] && d.Leader != leaders[p] {
					t.Fatalf("partition %d moved from %d to %d though its leader is alive", p, leaders[p], d.Leader)
				}
			}
			return true, ""
		})
		t.Logf("broker %d's %d partitions unavailable %v after the crash (session timeout %v)",
			victim, len(victimParts), took.Round(time.Millisecond), c.expiry())

		// The others keep serving, old records and new ones.
		cl2 := newClient(t, live, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		produce(t, ctx, cl2, topic, 12_000, 8_000, parts, others)
		expected(want, 12_000, 8_000, parts, others)
		survivors := map[int32][]int{}
		for p := range others {
			survivors[p] = want[p]
		}
		consumeCheck(t, ctx, live, topic, survivors)

		c.restart(t, victim)
		all := bootstrap(c, 3)
		testenv.WaitFor(t, waitTimeout, "leadership back on the restarted broker", func() (bool, string) {
			md := metadata(t, ctx, all[0], topic)
			for p, d := range md.Topics[topic].Partitions {
				if d.Leader != leaders[p] {
					return false, ""
				}
			}
			return true, ""
		})
		consumeCheck(t, ctx, all, topic, want)
	})
}

// TestControllerFailover: when the controller dies another broker takes
// over within the session timeout plus 2 s, and topics can be created
// again.
func TestControllerFailover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, c testCluster) {
		ctx := testenv.Context(t, 3*time.Minute)
		addrs := bootstrap(c, 3)
		// The brokers are up; the election and the watch that tells
		// broker 1 its outcome may still be under way.
		var old int32
		testenv.WaitFor(t, waitTimeout, "a controller among brokers 1, 2, 3", func() (bool, string) {
			old = metadata(t, ctx, addrs[0]).Controller
			return old >= 1 && old <= 3, ""
		})
		c.crash(t, old)
		killed := time.Now()
		live := bootstrap(c, 3)
		var now int32
		testenv.WaitFor(t, c.expiry()+30*time.Second, "a new controller", func() (bool, string) {
			now = metadata(t, ctx, live[0]).Controller
			return now >= 0 && now != old, ""
		})
		took := time.Since(killed)
		t.Logf("controller %d killed; broker %d controller after %v (session timeout %v)", old, now, took.Round(time.Millisecond), c.expiry())
		if limit := c.expiry() + controllerSlack; took > limit {
			t.Errorf("new controller after %v, want within %v", took, limit)
		}
		td := kafkatest.CreateTopic(t, live, "after-failover", 6, nil)
		for p, l := range leadersOf(td) {
			if l == old {
				t.Fatalf("partition %d of a new topic led by the dead broker %d", p, old)
			}
		}
		cl := newClient(t, live, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		produce(t, ctx, cl, "after-failover", 0, 600, 6, nil)
		want := map[int32][]int{}
		expected(want, 0, 600, 6, nil)
		consumeCheck(t, ctx, live, "after-failover", want)
	})
}

// TestDuplicateBrokerID: a second broker with a live broker's id refuses
// to start, naming the reason.
func TestDuplicateBrokerID(t *testing.T) {
	t.Run("zookeeper", func(t *testing.T) {
		connect := zktest.Chroot(t, zk(t), "clustertest")
		c := newProcCluster(t, connect, 1)
		props := filepath.Join(t.TempDir(), "dup.properties")
		writeFile(t, props, fmt.Sprintf("broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=%s\nzookeeper.connect=%s\n"+
			"zookeeper.session.timeout.ms=%d\n", t.TempDir(), connect, sessionTimeout.Milliseconds()))
		p := testproc.Launch(t, props)
		err := p.Wait(t, 30*time.Second)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("second broker 1: exit %v, want a non-zero exit\n%s", err, p.Output())
		}
		if out := p.Output(); !strings.Contains(out, "broker id 1 is already registered") {
			t.Fatalf("second broker 1 does not say why it stopped:\n%s", out)
		}
		if c.addr(1) == "" {
			t.Fatal("the first broker 1 stopped")
		}
	})
	t.Run("memcoord", func(t *testing.T) {
		c := newMemCluster(t, 1)
		b, err := broker.New(config.Config{BrokerID: 1, Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: []string{t.TempDir()}},
			nil, nil, broker.WithCoordinator(c.Connector()))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		err = b.Start(testenv.Context(t, time.Minute))
		if !errors.Is(err, cluster.ErrBrokerIDRegistered) {
			t.Fatalf("second broker 1 started: %v, want ErrBrokerIDRegistered", err)
		}
	})
}

// TestUnreachableZooKeeper: with no ZooKeeper at zookeeper.connect the
// broker exits non-zero after the connection timeout, saying so.
func TestUnreachableZooKeeper(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	const timeout = 1500 * time.Millisecond
	props := filepath.Join(t.TempDir(), "nozk.properties")
	writeFile(t, props, fmt.Sprintf("broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=%s\nzookeeper.connect=%s/tributary\n"+
		"zookeeper.connection.timeout.ms=%d\n", t.TempDir(), closed, timeout.Milliseconds()))
	start := time.Now()
	p := testproc.Launch(t, props)
	err = p.Wait(t, 30*time.Second)
	took := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("broker without ZooKeeper: exit %v, want a non-zero exit\n%s", err, p.Output())
	}
	if took < timeout {
		t.Fatalf("broker gave up after %v, before the connection timeout %v", took, timeout)
	}
	last := lastLine(p.Output())
	if !strings.Contains(last, "no ZooKeeper session with "+closed) || !strings.Contains(last, "1.5s") {
		t.Fatalf("last line %q does not name the unreachable ZooKeeper and the timeout", last)
	}
	t.Logf("exited after %v: %s", took.Round(time.Millisecond), last)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
