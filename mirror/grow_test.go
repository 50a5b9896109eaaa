package mirror

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorFollowsSourceGrowth: a source topic grown from 6 to 12
// partitions while mirrored into a target cluster of ours is grown on the
// target too (CreatePartitions) within the topic refresh interval, and
// every record, of the old partitions and the new, arrives intact, each in
// its source partition's number.
func TestMirrorFollowsSourceGrowth(t *testing.T) {
	dc1, target := newCluster(t, "dc1"), newCluster(t, "analytics")
	dc1.createTopic(t, "grows", 6, nil)
	want := newProduced()
	want.produce(t, dc1.client(t), "dc1", "grows", 6, 0, 600)
	const refresh = time.Second
	cfg := Config{
		Sources:              []SourceConfig{zkSource(dc1)},
		TargetBrokers:        []string{target.addr},
		TargetName:           "analytics",
		Topics:               "grows",
		GroupID:              "mirror-grow",
		TopicRefreshInterval: refresh,
		CommitInterval:       500 * time.Millisecond,
		RebalanceBackoff:     200 * time.Millisecond,
		Logger:               testLogger(t, slog.LevelInfo),
	}
	stop := runMirror(t, cfg, nil)
	got := readTarget(t, target, "grows")
	got.waitComplete(t, want, time.Minute)

	ctx := testContext(t, 3*time.Minute)
	resp, err := kadm.NewClient(dc1.client(t)).UpdatePartitions(ctx, 12, "grows")
	if err == nil {
		err = resp["grows"].Err
	}
	if err != nil {
		t.Fatalf("growing the source topic to 12 partitions: %v", err)
	}
	grown := time.Now()
	tadm := kadm.NewClient(target.client(t, kgo.MetadataMinAge(50*time.Millisecond)))
	waitFor(t, 2*refresh+3*time.Second, "12 partitions on the target", func() (bool, string) {
		d, err := tadm.ListTopics(ctx, "grows")
		if err != nil {
			return false, err.Error()
		}
		n := len(d["grows"].Partitions)
		return n == 12, fmt.Sprintf("%d partitions", n)
	})
	t.Logf("the target grew %v after the source", time.Since(grown).Round(time.Millisecond))
	// A new client, which sees 12 partitions: keys spread over all of them.
	want.produce(t, dc1.client(t), "dc1", "grows", 12, 600, 1200)
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
