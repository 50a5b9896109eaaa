package mirror

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

const eosWindow = 10 * time.Second

// eosConfig writes the properties of an exactly-once mirror of topic from
// dc1 into target.
func eosConfig(t *testing.T, dc1, target *cluster, topic string, extra ...string) string {
	t.Helper()
	props := map[string]string{
		"source.dc1.bootstrap.servers": dc1.Addr(),
		"target.bootstrap.servers":     target.Addr(),
		"target.name":                  "analytics",
		"topics":                       topic,
		"group.id":                     "mirror-eos",
		"exactly.once":                 "true",
		"transaction.timeout.ms":       "20000",
		"topic.refresh.interval.ms":    "1000",
		"audit.window.ms":              fmt.Sprint(eosWindow.Milliseconds()),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	return testproc.WriteProperties(t, t.TempDir(), "mirror.properties", props)
}

// readCommitted reads a target topic with isolation.level=read_committed.
func readCommitted(t *testing.T, c *cluster, topic string) *targetReader {
	return readTarget(t, c, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

// verifyExactlyOnce checks that r holds every produced record once, content
// equal and in order per source partition.
func verifyExactlyOnce(t *testing.T, r *targetReader, want *produced) {
	t.Helper()
	r.waitComplete(t, want, 3*time.Minute)
	if dups := r.verify(t, want, nil); dups != 0 {
		t.Fatalf("read_committed: %d duplicates, want none", dups)
	}
	if _, total := r.counts(); total != want.len() {
		t.Fatalf("read_committed: %d records, want %d", total, want.len())
	}
}

// producedWindows is what the test produced per audit window.
func producedWindows(p *produced) map[time.Time]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[time.Time]int64{}
	for _, r := range p.recs {
		out[audit.WindowStart(r.ts, eosWindow)]++
	}
	return out
}

// committedAuditWindows sums the mirror tier's counts of topic per window
// over the committed audit events of the target: a sentinel record
// produced (outside any transaction) to every partition of __audit marks
// how far to read.
func committedAuditWindows(t *testing.T, target *cluster, topic string) map[time.Time]int64 {
	t.Helper()
	ctx := testenv.Context(t, time.Minute)
	ends := endOffsets(t, target, audit.DefaultTopic)
	pcl := target.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	sentinel := map[int32]int64{}
	for p := range ends {
		r, err := pcl.ProduceSync(ctx, &kgo.Record{Topic: audit.DefaultTopic, Partition: p, Value: []byte("sentinel")}).First()
		if err != nil {
			t.Fatal(err)
		}
		sentinel[p] = r.Offset
	}
	cl := target.Client(t, kgo.ConsumeTopics(audit.DefaultTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[int32]bool{}
	ids := map[string]bool{}
	out := map[time.Time]int64{}
	for len(seen) < len(sentinel) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (sentinels seen %v of %v)", audit.DefaultTopic, ctx.Err(), seen, sentinel)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == sentinel[r.Partition] {
				seen[r.Partition] = true
				return
			}
			e, err := audit.UnmarshalEvent(r.Value)
			if err != nil {
				t.Fatalf("audit event at %d/%d: %v", r.Partition, r.Offset, err)
			}
			if e.Tier != audit.TierMirror || e.Topic != topic || ids[e.ID] {
				return
			}
			ids[e.ID] = true
			if e.Window != eosWindow || e.Cluster != "analytics" {
				t.Fatalf("audit event %+v: want window %v, cluster analytics", e, eosWindow)
			}
			out[e.WindowStart] += e.Count
		})
	}
	return out
}

// TestMirrorExactlyOnceKills is the issue's must-show: a `tributary
// mirror` with exactly.once=true, SIGKILLed five times mid-stream and
// restarted, while records are produced to the source (in steps). A
// read_committed consumer of the target sees every source record exactly
// once, with key, value, headers and timestamp equal, in order; the mirror
// tier's committed audit counts per window equal what was produced.
func TestMirrorExactlyOnceKills(t *testing.T) {
	const partitions = 6
	total := 20_000
	if full() {
		total = 200_000
	}
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "orders", partitions, nil)
	config := eosConfig(t, dc1, target, "orders")
	committed := readCommitted(t, target, "orders")
	uncommitted := readTarget(t, target, "orders")
	want := newProduced()
	src := dc1.Client(t)
	mirror := startMirror(t, config)

	// Produce in small steps, keeping the mirror a few thousand records
	// behind, and kill it each time it committed another sixth of the
	// records: every kill lands with records fetched and in flight.
	const step = 500
	kills := 0
	kill := func() {
		if err := mirror.signal(t, syscall.SIGKILL); err == nil {
			t.Fatal("SIGKILLed mirror exited cleanly")
		}
		kills++
		got, _ := committed.counts()
		_, seen := uncommitted.counts()
		t.Logf("kill %d: %d of %d records committed in the target, %d read uncommitted", kills, got, want.len(), seen)
		mirror = startMirror(t, config)
	}
	threshold := func() int { return (kills + 1) * total / 6 }
	for from := 0; from < total; from += step {
		want.produce(t, src, "dc1", "orders", partitions, from, step)
		if got, _ := committed.counts(); kills < 5 && got >= threshold() {
			kill()
		}
		testenv.WaitFor(t, 2*time.Minute, "the mirror to keep up", func() (bool, string) {
			got, _ := committed.counts()
			return want.len()-got < 4000, fmt.Sprintf("%d of %d committed", got, want.len())
		})
	}
	for kills < 5 {
		testenv.WaitFor(t, 2*time.Minute, "the mirror to make progress", func() (bool, string) {
			got, _ := committed.counts()
			return got >= min(threshold(), want.len()-1), fmt.Sprintf("%d of %d committed", got, want.len())
		})
		kill()
	}
	verifyExactlyOnce(t, committed, want)
	if err := mirror.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("mirror exit after SIGTERM: %v", err)
	}
	uncommitted.waitComplete(t, want, time.Minute)
	aborted := uncommitted.verify(t, want, nil)
	t.Logf("%d records, %d kills: read_committed saw each once; read_uncommitted saw %d records of aborted transactions", want.len(), kills, aborted)

	wantWindows := producedWindows(want)
	if got := committedAuditWindows(t, target, "orders"); !maps.Equal(got, wantWindows) {
		t.Fatalf("mirror tier's committed audit counts per window %v, produced %v", got, wantWindows)
	}
}

// TestMirrorExactlyOnceZombie: a mirror SIGSTOPped while a second one
// with the same configuration (so the same transactional.id) takes over
// is fenced when it resumes: it exits non-zero naming the fencing, and the
// target holds every record once.
func TestMirrorExactlyOnceZombie(t *testing.T) {
	const partitions = 3
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "orders", partitions, nil)
	config := eosConfig(t, dc1, target, "orders")
	committed := readCommitted(t, target, "orders")
	want := newProduced()
	src := dc1.Client(t)

	zombie := startMirror(t, config)
	want.produce(t, src, "dc1", "orders", partitions, 0, 3000)
	testenv.WaitFor(t, 2*time.Minute, "the first mirror to commit", func() (bool, string) {
		got, _ := committed.counts()
		return got > 0, fmt.Sprintf("%d committed", got)
	})
	if err := zombie.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = zombie.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	want.produce(t, src, "dc1", "orders", partitions, 3000, 3000)
	successor := startMirror(t, config)
	committed.waitComplete(t, want, 2*time.Minute)

	// The zombie resumes behind the successor: whatever it fetched, its
	// transactions are fenced.
	want.produce(t, src, "dc1", "orders", partitions, 6000, 3000)
	if err := zombie.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	resumed := time.Now()
	select {
	case err := <-zombie.exited:
		zombie.exited <- err
		if err == nil {
			t.Fatal("the zombie mirror exited 0")
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the zombie mirror still runs 2 minutes after SIGCONT:\n%s", zombie.out.String())
	}
	out := zombie.out.String()
	i := strings.Index(out, "fenced by a newer instance")
	if i < 0 {
		t.Fatalf("the zombie's output does not name the fencing:\n%s", out)
	}
	line, _, _ := strings.Cut(out[i:], "\n")
	t.Logf("the zombie exited %v after SIGCONT: %s", time.Since(resumed).Round(time.Millisecond), line)
	verifyExactlyOnce(t, committed, want)
	if err := successor.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("successor exit after SIGTERM: %v", err)
	}
}

// TestMirrorExactlyOnceBadConfig: exactly.once=true with a setting it
// cannot work with makes `tributary mirror` exit non-zero naming the key.
func TestMirrorExactlyOnceBadConfig(t *testing.T) {
	dir := t.TempDir()
	base := map[string]string{"source.dc1.bootstrap.servers": "127.0.0.1:1", "target.bootstrap.servers": "127.0.0.1:2",
		"group.id": "g", "topics": "a", "exactly.once": "true"}
	for key, extra := range map[string]map[string]string{
		// The ZooKeeper groups keep the offsets outside the target's transactions.
		"source.dc1.zookeeper.connect": {"source.dc1.zookeeper.connect": "127.0.0.1:3"},
		"exactly.once":                 {"exactly.once": "sometimes"},
		"transaction.timeout.ms":       {"transaction.timeout.ms": "-5"},
	} {
		props := maps.Clone(base)
		maps.Copy(props, extra)
		path := testproc.WriteProperties(t, dir, key+".properties", props)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, testproc.Binary(t), "mirror", "--config", path).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), key) {
			t.Errorf("%s: exit %v, output %q: want a failure naming %s", key, err, out, key)
		}
	}
	c, _, err := ConfigFromProperties(map[string]string{"source.dc1.bootstrap.servers": "h:1", "target.bootstrap.servers": "h:2",
		"group.id": "g", "topics": "a", "transactional.id.prefix": "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "transactional.id.prefix") {
		t.Errorf("transactional.id.prefix without exactly.once: %v, want an error naming it", err)
	}
}

// TestMirrorExactlyOnceTargetRestart: the target's broker stops while
// transactions are in flight and comes back after transaction.timeout.ms;
// the mirror aborts (or the coordinator times out) what was open, rewinds
// to the offsets stored on the target and goes on: read_committed still
// sees every record once, and the committed audit counts equal the
// producer's.
func TestMirrorExactlyOnceTargetRestart(t *testing.T) {
	const partitions = 4
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "orders", partitions, nil)
	config := eosConfig(t, dc1, target, "orders", "transaction.timeout.ms", "3000")
	want := newProduced()
	src := dc1.Client(t)
	p := startMirror(t, config)
	committed := readCommitted(t, target, "orders")
	want.produce(t, src, "dc1", "orders", partitions, 0, 4000)
	testenv.WaitFor(t, 2*time.Minute, "the mirror to commit", func() (bool, string) {
		got, _ := committed.counts()
		return got > 0, fmt.Sprintf("%d committed", got)
	})
	target.Stop(t, 1)
	want.produce(t, src, "dc1", "orders", partitions, 4000, 4000)
	testenv.WaitFor(t, 2*time.Minute, "the mirror to abort a transaction", func() (bool, string) {
		return strings.Contains(p.out.String(), "exactly-once transaction aborted"), ""
	})
	target.Restart(t, 1)
	committed = readCommitted(t, target, "orders")
	verifyExactlyOnce(t, committed, want)
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("mirror exit after SIGTERM: %v\n%s", err, p.out.String())
	}
	wantWindows := producedWindows(want)
	if got := committedAuditWindows(t, target, "orders"); !maps.Equal(got, wantWindows) {
		t.Fatalf("mirror tier's committed audit counts per window %v, produced %v", got, wantWindows)
	}
}

// TestMirrorExactlyOnceFollowsSourceGrowth: with exactly.once=true (no
// group sees the growth) a source topic grown from 3 to 6 partitions is
// picked up at the topic refresh: the new partitions' records arrive once
// each, in their partitions, read_committed. The growth usually comes
// within the target client's metadata cache (5 s) of the target topic's
// creation (see TestEnsureTargetGrowsTopicJustCreated).
func TestMirrorExactlyOnceFollowsSourceGrowth(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopic(t, "grows", 3)
	want := newProduced()
	want.produce(t, dc1.Client(t), "dc1", "grows", 3, 0, 300)
	stop := runMirror(t, Config{
		Sources:              []SourceConfig{{Name: "dc1", Brokers: []string{dc1.Addr()}}},
		TargetBrokers:        []string{target.Addr()},
		Topics:               "grows",
		GroupID:              "mirror-eos-grow",
		ExactlyOnce:          true,
		AuditDisable:         true,
		TopicRefreshInterval: time.Second,
	}, nil)
	readCommitted(t, target, "grows").waitComplete(t, want, time.Minute)
	resp, err := kadm.NewClient(dc1.Client(t)).UpdatePartitions(testenv.Context(t, time.Minute), 6, "grows")
	if err == nil {
		err = resp["grows"].Err
	}
	if err != nil {
		t.Fatalf("growing the source topic to 6 partitions: %v", err)
	}
	want.produce(t, dc1.Client(t), "dc1", "grows", 6, 300, 600)
	// A reader that learns of the target's new partitions soon.
	got := readTarget(t, target, "grows", kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	verifyExactlyOnce(t, got, want)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for p := int32(3); p < 6; p++ {
		if len(got.byPart[p]) == 0 {
			t.Errorf("target partition %d (new) got no records", p)
		}
	}
}
