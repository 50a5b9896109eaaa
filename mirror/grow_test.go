package mirror

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestMirrorFollowsSourceGrowth: a source topic grown from 6 to 12
// partitions while mirrored into a target cluster of ours is grown on the
// target too (CreatePartitions) within the topic refresh interval, and
// every record, of the old partitions and the new, arrives intact, each in
// its source partition's number.
func TestMirrorFollowsSourceGrowth(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopic(t, "grows", 6)
	want := newProduced()
	want.produce(t, dc1.Client(t), "dc1", "grows", 6, 0, 600)
	const refresh = time.Second
	cfg := Config{
		Sources:              []SourceConfig{zkSource(dc1)},
		TargetBrokers:        []string{target.Addr()},
		TargetName:           "analytics",
		Topics:               "grows",
		GroupID:              "mirror-grow",
		TopicRefreshInterval: refresh,
		CommitInterval:       500 * time.Millisecond,
		RebalanceBackoff:     200 * time.Millisecond,
		Logger:               testenv.Logger(t, slog.LevelInfo),
	}
	stop := runMirror(t, cfg, nil)
	got := readTarget(t, target, "grows")
	got.waitComplete(t, want, time.Minute)

	ctx := testenv.Context(t, 3*time.Minute)
	resp, err := kadm.NewClient(dc1.Client(t)).UpdatePartitions(ctx, 12, "grows")
	if err == nil {
		err = resp["grows"].Err
	}
	if err != nil {
		t.Fatalf("growing the source topic to 12 partitions: %v", err)
	}
	grown := time.Now()
	tadm := kadm.NewClient(target.Client(t, kgo.MetadataMinAge(50*time.Millisecond)))
	testenv.WaitFor(t, 2*refresh+3*time.Second, "12 partitions on the target", func() (bool, string) {
		d, err := tadm.ListTopics(ctx, "grows")
		if err != nil {
			return false, err.Error()
		}
		n := len(d["grows"].Partitions)
		return n == 12, fmt.Sprintf("%d partitions", n)
	})
	t.Logf("the target grew %v after the source", time.Since(grown).Round(time.Millisecond))
	// A new client, which sees 12 partitions: keys spread over all of them.
	want.produce(t, dc1.Client(t), "dc1", "grows", 12, 600, 1200)
	// A new reader: the first one's consumer would learn of the new
	// partitions only at its next metadata refresh.
	got = readTarget(t, target, "grows")
	got.waitComplete(t, want, time.Minute)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got.verify(t, want, nil)
	got.mu.Lock()
	defer got.mu.Unlock()
	for p := int32(6); p < 12; p++ {
		if len(got.byPart[p]) == 0 {
			t.Errorf("target partition %d (new) got no records", p)
		}
		for _, rc := range got.byPart[p] {
			if o, _ := recordOrigin(rc); o.partition != p {
				t.Fatalf("target partition %d holds a record of source partition %d", p, o.partition)
			}
		}
	}
}

// TestEnsureTargetGrowsTopicJustCreated: a source topic that grows right
// after its target topic was created gets its new target partitions. The
// look before the creation left "unknown topic" in the target client's
// metadata cache; ensureTarget read that (kadm's ListTopics), took the
// topic for missing, got TOPIC_ALREADY_EXISTS and counted 6 partitions on
// a target topic of 3, so exactly.once's transactions waited for target
// partitions that never came (TestMirrorExactlyOnceFollowsSourceGrowth).
// The target client keeps its metadata a minute here, so that the stale
// answer outlives the test on a busy machine (the mirror's keeps it 5 s).
func TestEnsureTargetGrowsTopicJustCreated(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.CreateTopic(t, "grows", 3)
	m, err := New(Config{
		Sources:       []SourceConfig{{Name: "dc1", Brokers: []string{dc1.Addr()}}},
		TargetBrokers: []string{target.Addr()},
		Topics:        "grows",
		GroupID:       "mirror-ensure",
		AuditDisable:  true,
		Logger:        testenv.Logger(t, slog.LevelInfo),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.target = target.Client(t, kgo.MetadataMinAge(time.Minute))
	m.tadm = kadm.NewClient(m.target)
	s := m.sources[0]
	s.adm = kadm.NewClient(dc1.Client(t))
	ctx := testenv.Context(t, 2*time.Minute)
	check := func(want int) {
		t.Helper()
		// A client of its own: a fresh look at the target.
		d, err := kadm.NewClient(target.Client(t)).ListTopics(ctx, "grows")
		if err == nil {
			err = d["grows"].Err
		}
		if err != nil {
			t.Fatalf("target metadata: %v", err)
		}
		if n := len(d["grows"].Partitions); n != want {
			t.Fatalf("target topic has %d partitions, want %d", n, want)
		}
		m.mu.Lock()
		made := m.made["grows"]
		m.mu.Unlock()
		if made != want {
			t.Fatalf("the mirror counts %d target partitions, want %d", made, want)
		}
	}
	if err := m.ensureTarget(ctx, s, "grows", 3); err != nil {
		t.Fatalf("creating the target topic: %v", err)
	}
	check(3)
	if err := m.ensureTarget(ctx, s, "grows", 6); err != nil {
		t.Fatalf("growing the target topic: %v", err)
	}
	check(6)
}
