package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// commitWatcher records every value the group's offset registry of a
// source takes, through ZooKeeper data watches.
type commitWatcher struct {
	mu   sync.Mutex
	seen map[int32]map[int64]bool
	last map[int32]int64
}

func watchCommits(t *testing.T, zk, group, topic string, partitions int32) *commitWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sess, err := zkcoord.Connect(testenv.Context(t, 30*time.Second), zk, zkcoord.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := &commitWatcher{seen: map[int32]map[int64]bool{}, last: map[int32]int64{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); sess.Close() })
	for p := range partitions {
		w.seen[p] = map[int64]bool{0: true}
		path := coord.Join("/consumers", group, "offsets", topic, strconv.Itoa(int(p)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				data, _, ch, err := sess.GetW(ctx, path)
				if errors.Is(err, coord.ErrNoNode) {
					_, _, ch, err = sess.ExistsW(ctx, path)
				} else if err == nil {
					if off, perr := strconv.ParseInt(string(data), 10, 64); perr == nil {
						w.mu.Lock()
						w.seen[p][off] = true
						w.last[p] = off
						w.mu.Unlock()
					}
				}
				if err != nil {
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
		}()
	}
	return w
}

func (w *commitWatcher) starts(p int32) map[int64]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.seen[p])
}

func (w *commitWatcher) committed() map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.last)
}

// TestMirrorKillAndRestart is the run: two source clusters and a
// target (real ZooKeeper, a chroot each), keyed records over 12 partitions
// produced while two `tributary mirror` processes run with one config;
// one of them is SIGKILLed and restarted 3 times. Every record arrives
// with key, value, headers and timestamp equal, in order per source
// partition; every duplicate belongs to a run re-sent from an offset the
// group had committed; after SIGTERM the committed offsets are the ends.
func TestMirrorKillAndRestart(t *testing.T) {
	const partitions = 12
	perSource := 50_000
	if full() {
		perSource = 500_000
	}
	dc1, dc2, target := newCluster(t, "dc1"), newCluster(t, "dc2"), newCluster(t, "analytics")
	for _, c := range []*cluster{dc1, dc2} {
		c.CreateTopicWithConfigs(t, "page-views", partitions, nil)
	}
	config := testproc.WriteProperties(t, t.TempDir(), "mirror.properties", map[string]string{
		"source.dc1.bootstrap.servers": dc1.Addr(),
		"source.dc1.zookeeper.connect": dc1.ZooKeeper(),
		"source.dc2.bootstrap.servers": dc2.Addr(),
		"source.dc2.zookeeper.connect": dc2.ZooKeeper(),
		"target.bootstrap.servers":     target.Addr(),
		"topics":                       "page-views",
		"group.id":                     "mirror-test",
		"offset.commit.interval.ms":    "500",
		"topic.refresh.interval.ms":    "1000",
		"zookeeper.session.timeout.ms": "4000",
		"rebalance.backoff.ms":         "500",
		"audit.interval.ms":            "1000",
	})
	watchers := map[string]*commitWatcher{
		"dc1": watchCommits(t, dc1.ZooKeeper(), "mirror-test", "page-views", partitions),
		"dc2": watchCommits(t, dc2.ZooKeeper(), "mirror-test", "page-views", partitions),
	}
	procs := []*proc{startMirror(t, config), startMirror(t, config)}
	reader := readTarget(t, target, "page-views")
	want := newProduced()
	cl1, cl2 := dc1.Client(t), dc2.Client(t)

	// Produce in steps while mirroring; kill one mirror at three points,
	// each once the target has caught up with at least half of what was
	// produced, so that every kill lands mid-run with work in flight.
	const steps = 20
	step := perSource / steps
	kills := 0
	for i := range steps {
		want.produce(t, cl1, "dc1", "page-views", partitions, i*step, step)
		want.produce(t, cl2, "dc2", "page-views", partitions, i*step, step)
		if i == 4 || i == 9 || i == 14 {
			testenv.WaitFor(t, 2*time.Minute, "the mirrors to make progress", func() (bool, string) {
				got, _ := reader.counts()
				return got >= want.len()/2, fmt.Sprintf("%d of %d", got, want.len())
			})
			victim := kills % 2
			if err := procs[victim].signal(t, syscall.SIGKILL); err == nil {
				t.Fatal("SIGKILLed mirror exited cleanly")
			}
			kills++
			got, total := reader.counts()
			t.Logf("kill %d at %d of %d records mirrored (%d with duplicates)", kills, got, want.len(), total)
			procs[victim] = startMirror(t, config)
		}
	}
	reader.waitComplete(t, want, 3*time.Minute)
	for _, p := range procs {
		if err := p.signal(t, syscall.SIGTERM); err != nil {
			t.Fatalf("mirror exit after SIGTERM: %v", err)
		}
	}
	// SIGTERM drained and committed: each source partition's offset is its end.
	for name, c := range map[string]*cluster{"dc1": dc1, "dc2": dc2} {
		ends := endOffsets(t, c, "page-views")
		testenv.WaitFor(t, 10*time.Second, name+" commits seen", func() (bool, string) {
			return maps.Equal(watchers[name].committed(), ends), fmt.Sprintf("committed %v, ends %v", watchers[name].committed(), ends)
		})
	}
	dups := reader.verify(t, want, func(s string, p int32) map[int64]bool { return watchers[s].starts(p) })
	_, total := reader.counts()
	t.Logf("%d records per source, %d kills: %d target records, %d duplicates", perSource, kills, total, dups)
}

// TestMirrorKillNeverUndercounts: a mirror SIGKILLed right after it
// committed must already have published the audit counts of every record
// before its commits, or the audit reports a loss that did not happen (the
// next owner starts after those records and never counts them). The
// counts are published here only when the mirror commits (audit.interval.ms
// is an hour): a commit without its counts shows as a shortfall.
func TestMirrorKillNeverUndercounts(t *testing.T) {
	const partitions, n = 3, 3000
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "pv", partitions, nil)
	want := newProduced()
	want.produce(t, dc1.Client(t), "dc1", "pv", partitions, 0, n)
	config := testproc.WriteProperties(t, t.TempDir(), "mirror.properties", map[string]string{
		"source.dc1.bootstrap.servers": dc1.Addr(),
		"source.dc1.zookeeper.connect": dc1.ZooKeeper(),
		"target.bootstrap.servers":     target.Addr(),
		"target.name":                  "analytics",
		"topics":                       "pv",
		"group.id":                     "mirror-undercount",
		"offset.commit.interval.ms":    "200",
		"topic.refresh.interval.ms":    "1000",
		"audit.interval.ms":            "3600000",
	})
	watcher := watchCommits(t, dc1.ZooKeeper(), "mirror-undercount", "pv", partitions)
	p := startMirror(t, config)
	testenv.WaitFor(t, 2*time.Minute, "every record committed", func() (bool, string) {
		var sum int64
		for _, off := range watcher.committed() {
			sum += off
		}
		return sum == n, fmt.Sprintf("%d of %d committed", sum, n)
	})
	if err := p.signal(t, syscall.SIGKILL); err == nil {
		t.Fatal("the mirror exited 0 after SIGKILL")
	}
	if got := auditCounts(t, target)["pv"]; got < n {
		t.Errorf("after the kill, the mirror tier's audit counts %d records of pv, but %d were committed: the audit reports a loss that did not happen", got, n)
	}
}
