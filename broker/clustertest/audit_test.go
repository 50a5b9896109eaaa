package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/broker"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// auditBackends are the clusters of the audit topic tests: broker
// processes on ZooKeeper, SIGKILLed; in-process brokers whose Close skips
// the controlled shutdown, so that a closed broker leaves its leaderships
// behind as a dead one does.
var auditBackends = []backend{
	{"zookeeper", 0, func(t *testing.T) testCluster { return newProcCluster(t, zktest.Chroot(t, zk(t), "clustertest"), 3) }},
	{"memcoord", 0, func(t *testing.T) testCluster {
		return newMemClusterWith(t, 3, func(c *config.Config) { c.Replication.NoControlledShutdown = true })
	}},
}

// awaitBrokers waits until every one of addrs lists n live brokers: the
// audit topic's replication is capped at the live brokers the creating
// broker knows of.
func awaitBrokers(t *testing.T, ctx context.Context, addrs []string, n int) {
	t.Helper()
	for _, a := range addrs {
		testenv.WaitFor(t, waitTimeout, fmt.Sprintf("broker %s to see %d brokers", a, n), func() (bool, string) {
			return len(metadata(t, ctx, a).Brokers) == n, ""
		})
	}
}

// publishAudit publishes n audit events through a publisher of its own
// (the first one auto-creates the topic), one instance each, so that they
// spread over the partitions.
func publishAudit(t *testing.T, ctx context.Context, addrs []string, first, n int) {
	t.Helper()
	pub := audit.NewKafkaPublisher(newClient(t, addrs), "")
	events := make([]audit.Event, n)
	for i := range events {
		events[i] = audit.Event{
			ID: fmt.Sprintf("event-%d", first+i), Tier: audit.TierProducer, Cluster: "test",
			Instance: fmt.Sprintf("instance-%d", first+i), Topic: "pageviews",
			WindowStart: time.UnixMilli(0).UTC(), Window: time.Minute, Count: 1, EmittedAt: time.Now().UTC(),
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := pub.Publish(pctx, events); err != nil {
		t.Fatalf("publishing audit events %d..%d: %v", first, first+n-1, err)
	}
}

// auditRecords sums the audit topic's end offsets (high watermarks).
func auditRecords(t *testing.T, ctx context.Context, addrs []string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(newClient(t, addrs)).ListEndOffsets(ctx, broker.AuditTopic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		n += o.Offset
	})
	return n
}

// TestAuditTopicReplicated: on 3 brokers the audit topic a publisher
// auto-creates has 3 replicas per partition; with one broker dead every
// partition still has a leader and publishing goes on, nothing lost.
func TestAuditTopicReplicated(t *testing.T) {
	t.Parallel() // clusters of its own, mostly waiting for replicas and leaders
	if audit.DefaultTopic != broker.AuditTopic {
		t.Fatalf("audit.DefaultTopic %q, broker.AuditTopic %q: the broker would not create the audit topic replicated", audit.DefaultTopic, broker.AuditTopic)
	}
	for _, b := range auditBackends {
		t.Run(b.name, func(t *testing.T) {
			c := b.start(t)
			ctx := testenv.Context(t, 5*time.Minute)
			addrs := bootstrap(c, 3)
			awaitBrokers(t, ctx, addrs, 3)
			publishAudit(t, ctx, addrs, 0, 30)
			var td kadm.TopicDetail
			testenv.WaitFor(t, waitTimeout, "3 in-sync replicas of every audit partition", func() (bool, string) {
				td = metadata(t, ctx, addrs[0], broker.AuditTopic).Topics[broker.AuditTopic]
				if td.Err != nil || len(td.Partitions) != 3 { // num.partitions=3
					return false, ""
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || len(p.Replicas) != 3 || len(p.ISR) != 3 {
						return false, ""
					}
				}
				return true, ""
			})

			victim := td.Partitions[0].Leader
			c.crash(t, victim)
			live := bootstrap(c, 3)
			testenv.WaitFor(t, waitTimeout+c.expiry(), fmt.Sprintf("leaders off dead broker %d", victim), func() (bool, string) {
				td = metadata(t, ctx, live[0], broker.AuditTopic).Topics[broker.AuditTopic]
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Leader == victim {
						return false, ""
					}
				}
				return len(td.Partitions) == 3, ""
			})
			publishAudit(t, ctx, live, 30, 30)
			if got := auditRecords(t, ctx, live); got != 60 {
				t.Fatalf("audit topic holds %d records after one broker died, want the 60 published", got)
			}
		})
	}
}

// TestAuditTopicOnOneBroker: one live broker creates the audit topic with
// one replica (3 capped at the live brokers), where a fixed factor of 3
// would fail with INVALID_REPLICATION_FACTOR.
func TestAuditTopicOnOneBroker(t *testing.T) {
	c := newMemCluster(t, 1)
	ctx := testenv.Context(t, 2*time.Minute)
	addrs := bootstrap(c, 1)
	publishAudit(t, ctx, addrs, 0, 5)
	td := metadata(t, ctx, addrs[0], broker.AuditTopic).Topics[broker.AuditTopic]
	if td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("audit topic: err %v, %d partitions, want 3 (num.partitions)", td.Err, len(td.Partitions))
	}
	for _, p := range td.Partitions {
		if len(p.Replicas) != 1 {
			t.Fatalf("audit partition %d: replicas %v, want 1", p.Partition, p.Replicas)
		}
	}
	if got := auditRecords(t, ctx, addrs); got != 5 {
		t.Fatalf("audit topic holds %d records, want 5", got)
	}
}

// TestAuditTopicKeys: audit.topic.replication.factor and
// audit.topic.num.partitions set how the audit topic is created, whether a
// publisher auto-creates it or a CreateTopics leaves the layout to the
// broker (-1, as the mirror does for a target's __audit); an explicit
// layout is the creator's.
func TestAuditTopicKeys(t *testing.T) {
	props, _, err := config.FromProperties(map[string]string{
		"log.dirs": "unused", "audit.topic.replication.factor": "2", "audit.topic.num.partitions": "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newMemClusterWith(t, 3, func(cfg *config.Config) { cfg.Audit = props.Audit })
	ctx := testenv.Context(t, 3*time.Minute)
	addrs := bootstrap(c, 3)
	awaitBrokers(t, ctx, addrs, 3)
	layout := func(what string) {
		t.Helper()
		testenv.WaitFor(t, waitTimeout, what+": 5 partitions of 2 in-sync replicas", func() (bool, string) {
			td := metadata(t, ctx, addrs[0], broker.AuditTopic).Topics[broker.AuditTopic]
			if td.Err != nil || len(td.Partitions) != 5 {
				return false, ""
			}
			for _, p := range td.Partitions {
				if p.Leader < 0 || len(p.Replicas) != 2 || len(p.ISR) != 2 {
					return false, ""
				}
			}
			return true, ""
		})
	}
	publishAudit(t, ctx, addrs, 0, 10)
	layout("auto-created")

	adm := kadm.NewClient(newClient(t, addrs))
	if _, err := adm.DeleteTopic(ctx, broker.AuditTopic); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, waitTimeout, "audit topic deleted", func() (bool, string) {
		_, ok := metadata(t, ctx, addrs[0]).Topics[broker.AuditTopic]
		return !ok, ""
	})
	resp, err := adm.CreateTopic(ctx, -1, -1, nil, broker.AuditTopic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopics %s -1 -1: %v %v", broker.AuditTopic, err, resp.Err)
	}
	if resp.NumPartitions != 5 || resp.ReplicationFactor != 2 {
		t.Fatalf("CreateTopics %s -1 -1 answered %d partitions, RF %d, want 5 and 2", broker.AuditTopic, resp.NumPartitions, resp.ReplicationFactor)
	}
	layout("created with CreateTopics -1 -1")

	const other = "not-audit"
	resp, err = adm.CreateTopic(ctx, -1, -1, nil, other)
	if err != nil || resp.Err != nil || resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		t.Fatalf("CreateTopics %s -1 -1: %v %v, %d partitions RF %d, want num.partitions 3 and default.replication.factor 1",
			other, err, resp.Err, resp.NumPartitions, resp.ReplicationFactor)
	}
}
