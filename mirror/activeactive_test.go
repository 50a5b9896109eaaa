package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/mirror/origin"
)

// TestActiveActiveNoLoop: dc1 ⇄ dc2, a mirror each way, producers in
// both. Every record exists exactly once in each cluster (where it was
// produced, and its mirrored copy), none is mirrored back: under the
// default policy by MirrorMaker 2's naming rule (dc1.orders on dc2 is not
// mirrored to dc1), under the identity policy, where both clusters' orders
// hold both clusters' records, by the origin header. Both mirrors commit
// to their sources' ends, so they did read (and pass over) the records
// that came from their targets.
func TestActiveActiveNoLoop(t *testing.T) {
	for _, policy := range []string{DefaultReplicationPolicy, IdentityReplicationPolicy} {
		t.Run(policy[len("org.apache.kafka.connect.mirror."):], func(t *testing.T) { activeActive(t, policy) })
	}
}

func activeActive(t *testing.T, policy string) {
	const n = 1000
	dcs := map[string]*cluster{"dc1": newCluster(t, "dc1"), "dc2": newCluster(t, "dc2")}
	other := map[string]string{"dc1": "dc2", "dc2": "dc1"}
	topics := "orders"
	if policy == DefaultReplicationPolicy {
		topics = ".*" // would match dc1.orders on dc2 but for the cycle rule
	}
	for name, c := range dcs {
		c.CreateTopicWithConfigs(t, "orders", 3, nil)
		runMirror(t, Config{
			Sources:              []SourceConfig{{Name: name, Brokers: []string{c.Addr()}}},
			TargetBrokers:        []string{dcs[other[name]].Addr()},
			TargetName:           other[name],
			Topics:               topics,
			GroupID:              "mirror-" + name + "-" + other[name],
			ReplicationPolicy:    policy,
			CheckpointInterval:   time.Second,
			TopicRefreshInterval: time.Second,
			CommitInterval:       300 * time.Millisecond,
			ShutdownTimeout:      5 * time.Second,
			AuditDisable:         true,
		}, nil)
	}
	want := map[string]*produced{}
	for name, c := range dcs {
		want[name] = newProduced()
		want[name].produce(t, c.Client(t), name, "orders", 3, 0, n)
	}
	mirroredTopic := func(from string) string { // where from's records land in the other cluster
		if policy == DefaultReplicationPolicy {
			return from + ".orders"
		}
		return "orders"
	}
	// Wait for both copies, then for both mirrors to have committed their
	// sources' ends (everything read: mirrored or passed over).
	for name, c := range dcs {
		from := other[name]
		adm := kadm.NewClient(c.Client(t))
		testenv.WaitFor(t, time.Minute, fmt.Sprintf("%s's records in %s", from, name), func() (bool, string) {
			ends, err := adm.ListEndOffsets(testenv.Context(t, 10*time.Second), mirroredTopic(from))
			if err != nil || ends.Error() != nil {
				return false, fmt.Sprint(err, ends.Error())
			}
			got := 0
			for _, r := range readToEnd(t, c, mirroredTopic(from)) {
				if o, err := recordOrigin(r); err == nil && o.source == from {
					got++
				}
			}
			return got >= n, fmt.Sprintf("%d of %d", got, n)
		})
	}
	for name, c := range dcs {
		adm := kadm.NewClient(c.Client(t))
		group := "mirror-" + name + "-" + other[name]
		testenv.WaitFor(t, time.Minute, group+" at the end of "+name, func() (bool, string) {
			ctx := testenv.Context(t, 10*time.Second)
			ends, err := adm.ListEndOffsets(ctx, "orders")
			if err != nil {
				return false, err.Error()
			}
			got, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				return false, err.Error()
			}
			ok := true
			ends.Each(func(e kadm.ListedOffset) {
				if o, found := got.Lookup("orders", e.Partition); !found || o.At != e.Offset {
					ok = false
				}
			})
			return ok, fmt.Sprintf("committed %v, ends %v", got, ends)
		})
	}

	for name, c := range dcs {
		from := other[name]
		native, copies := 0, map[srcPos]int{}
		topicsHere := []string{"orders"}
		if policy == DefaultReplicationPolicy {
			topicsHere = append(topicsHere, mirroredTopic(from))
		}
		for _, topic := range topicsHere {
			for _, r := range readToEnd(t, c, topic) {
				origins := 0
				for _, h := range r.Headers {
					if h.Key == origin.Header {
						origins++
					}
				}
				if origins == 0 {
					native++
					continue
				}
				o, _ := recordOrigin(r)
				if origins > 1 || o.source != from {
					t.Fatalf("%s/%s holds a record mirrored back (origins %d, first %v)", name, topic, origins, o)
				}
				if _, ok := want[from].recs[o]; !ok {
					t.Fatalf("%s/%s holds %v, which %s's producer never wrote", name, topic, o, from)
				}
				copies[o]++
			}
		}
		for o, k := range copies {
			if k != 1 {
				t.Errorf("%v is %d times in %s", o, k, name)
			}
		}
		if native != n || len(copies) != n {
			t.Errorf("%s: %d records produced there (want %d), %d distinct copies of %s's (want %d)", name, native, n, len(copies), from, n)
		}
		details, err := kadm.NewClient(c.Client(t)).ListTopics(testenv.Context(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, back := range []string{name + ".orders", from + "." + name + ".orders", name + "." + from + ".orders"} {
			if details.Has(back) {
				t.Errorf("%s has topic %s: mirrored back", name, back)
			}
		}
	}
}
