package clustertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestWholeClusterRestart is issue 39's first item on ZooKeeper: three
// broker processes with a topic of three replicas and
// min.insync.replicas=2 are all stopped with SIGTERM and started again.
// The cluster comes back with the replicas, the leaders (the preferred
// ones, as before) and full ISRs it had, and the topic config; acks=all
// records produced right after the restart are acknowledged; and every
// record of both sides of the restart reads back by value. (The same
// restart of `tributary dev` on in-process coordination is
// cmd/tributary's TestDevRestartKeepsReplication.)
func TestWholeClusterRestart(t *testing.T) {
	c := newReplCluster(t, 3, nil)
	ctx := testenv.Context(t, 5*time.Minute)
	const topic, parts, n = "orders", 3, 300
	adm := kadm.NewClient(newClient(t, c.Seeds()))
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	before := awaitTopic(t, ctx, c.Seeds(), topic, func(td kadm.TopicDetail) bool {
		return allLed(td, parts) && allInSync(td, 3) && preferredLed(td)
	})
	cl := newClient(t, c.Seeds(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(t, ctx, cl, topic, 0, n, parts, nil)
	cl.Close()

	for id := int32(3); id >= 1; id-- {
		t.Logf("broker %d stopped with SIGTERM in %v", id, c.Stop(t, id))
	}
	for id := int32(1); id <= 3; id++ {
		c.Start(t, id)
	}
	cl = newClient(t, c.Seeds(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RetryTimeout(waitTimeout))
	produce(t, ctx, cl, topic, n, n, parts, nil)

	after := awaitTopic(t, ctx, c.Seeds(), topic, func(td kadm.TopicDetail) bool {
		return allLed(td, parts) && allInSync(td, 3) && preferredLed(td)
	})
	for p, d := range before.Partitions {
		if a := after.Partitions[p]; !slices.Equal(a.Replicas, d.Replicas) || a.Leader != d.Leader {
			t.Errorf("partition %d: replicas %v leader %d after the restart, %v and %d before", p, a.Replicas, a.Leader, d.Replicas, d.Leader)
		}
	}
	testenv.WaitFor(t, waitTimeout, "min.insync.replicas=2 on "+topic, func() (bool, string) {
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		r, err := rc.On(topic, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, kv := range r.Configs {
			if kv.Key == "min.insync.replicas" {
				return kv.MaybeValue() == "2", fmt.Sprintf("min.insync.replicas=%s", kv.MaybeValue())
			}
		}
		return false, "no min.insync.replicas"
	})
	want := map[int32][]int{}
	expected(want, 0, 2*n, parts, nil)
	consumeCheck(t, ctx, c.Seeds(), topic, want)
}

// preferredLed: every partition is led by its first replica.
func preferredLed(td kadm.TopicDetail) bool {
	for _, p := range td.Partitions {
		if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
			return false
		}
	}
	return true
}
