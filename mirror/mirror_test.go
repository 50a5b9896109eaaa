package mirror

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// runMirror runs a Mirror in-process until the returned stop is called
// (stop returns Run's error).
func runMirror(t testing.TB, cfg Config, counter Counter) (stop func() error) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testenv.Logger(t, slog.LevelInfo)
	}
	cfg.Registerer = prometheus.NewRegistry()
	m, err := New(cfg, counter)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(90 * time.Second):
				t.Fatal("Run did not return 90 s after its context ended")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func zkSource(c *cluster) SourceConfig {
	return SourceConfig{Name: c.name, Brokers: []string{c.Addr()}, ZooKeeperConnect: c.ZooKeeper()}
}

// TestMirrorNewTopicRenameAndAudit: the mirror as a library, with
// topic.rename; a topic created on a source after the mirror started is
// mirrored (target topic created with the source's partition count and
// configs) within 30 s; the audit events the mirror published to the
// target's __audit count exactly what it mirrored, per target topic.
func TestMirrorNewTopicRenameAndAudit(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopicWithConfigs(t, "early", 3, nil)
	want := newProduced()
	cl := dc1.Client(t)
	want.produce(t, cl, "dc1", "early", 3, 0, 300)
	cfg := Config{
		Sources:              []SourceConfig{zkSource(dc1)},
		TargetBrokers:        []string{target.Addr()},
		TargetName:           "analytics",
		Topics:               "early|late-.*",
		GroupID:              "mirror-lib",
		TopicRename:          "${source}.${topic}",
		TopicRefreshInterval: time.Second,
		CommitInterval:       500 * time.Millisecond,
		RebalanceBackoff:     200 * time.Millisecond,
		AuditInterval:        500 * time.Millisecond,
		Logger:               testenv.Logger(t, slog.LevelInfo),
	}
	counter, err := NewAuditCounter(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := runMirror(t, cfg, counter)
	early := readTarget(t, target, "dc1.early")
	early.waitComplete(t, want, time.Minute)

	lateWant := newProduced()
	created := time.Now()
	dc1.CreateTopicWithConfigs(t, "late-topic", 5, map[string]string{"retention.ms": "86400000"})
	lateWant.produce(t, cl, "dc1", "late-topic", 5, 0, 500)
	late := readTarget(t, target, "dc1.late-topic")
	late.waitComplete(t, lateWant, 30*time.Second)
	t.Logf("a topic created on the source was mirrored %v later", time.Since(created).Round(time.Millisecond))
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if dups := early.verify(t, want, func(string, int32) map[int64]bool { return map[int64]bool{0: true} }); dups != 0 {
		t.Errorf("%d duplicates without any failure", dups)
	}
	late.verify(t, lateWant, func(string, int32) map[int64]bool { return map[int64]bool{0: true} })

	adm := kadm.NewClient(target.Client(t))
	ctx := testenv.Context(t, 30*time.Second)
	details, err := adm.ListTopics(ctx, "dc1.late-topic")
	if err != nil || len(details["dc1.late-topic"].Partitions) != 5 {
		t.Fatalf("target topic: %v %v", details, err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "dc1.late-topic")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rcs.On("dc1.late-topic", nil); err != nil || !hasConfig(v.Configs, "retention.ms", "86400000") {
		t.Errorf("target topic configs %+v (%v): want retention.ms=86400000 from the source", v.Configs, err)
	}
	for _, name := range []string{"early", "late-topic"} {
		if _, ok := details[name]; ok {
			t.Errorf("topic %s exists on the target under its source name", name)
		}
	}

	// Run closed the counter, which published the rest: the events count
	// every acknowledged record once (no duplicates happened here).
	counts := auditCounts(t, target)
	for topic, n := range map[string]int64{"dc1.early": 300, "dc1.late-topic": 500} {
		if counts[topic] != n {
			t.Errorf("audit events of tier mirror count %d records of %s, want %d (all: %v)", counts[topic], topic, n, counts)
		}
	}
}

// auditCounts sums the tier-"mirror" audit events in the target's __audit
// per topic, deduplicated on ID as the audit service does.
func auditCounts(t *testing.T, target *cluster) map[string]int64 {
	t.Helper()
	ends := endOffsets(t, target, audit.DefaultTopic)
	cl := target.Client(t, kgo.ConsumeTopics(audit.DefaultTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testenv.Context(t, 30*time.Second)
	pos := map[int32]int64{}
	seen := map[string]bool{}
	out := map[string]int64{}
	for !reached(pos, ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (at %v of %v)", audit.DefaultTopic, ctx.Err(), pos, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			e, err := audit.UnmarshalEvent(r.Value)
			if err != nil {
				t.Fatalf("audit event at %d/%d: %v", r.Partition, r.Offset, err)
			}
			if e.Tier != "mirror" || seen[e.ID] {
				return
			}
			if e.Cluster != "analytics" {
				t.Errorf("audit event of cluster %q, want analytics", e.Cluster)
			}
			seen[e.ID] = true
			out[e.Topic] += e.Count
		})
	}
	return out
}

func reached(pos, ends map[int32]int64) bool {
	for p, end := range ends {
		if pos[p] < end {
			return false
		}
	}
	return true
}

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}
