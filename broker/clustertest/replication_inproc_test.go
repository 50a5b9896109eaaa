package clustertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// newReplicatedMemCluster starts n in-process brokers with a short
// replica.lag.time.max.ms.
func newReplicatedMemCluster(t *testing.T, n int) *memCluster {
	t.Helper()
	return newMemClusterWith(t, n, func(cfg *config.Config) {
		cfg.Replication.LagTimeMax = 2 * time.Second
		cfg.Replication.ControlledShutdownTimeout = 20 * time.Second
	})
}

// createReplicated creates a topic with rf replicas and the given configs
// and waits until every partition has a leader and a full ISR.
func createReplicated(t *testing.T, ctx context.Context, addrs []string, name string, partitions int32, rf int16, configs map[string]*string) kadm.TopicDetail {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addrs))
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	var td kadm.TopicDetail
	testenv.WaitFor(t, waitTimeout, "leaders and full ISRs of "+name, func() (bool, string) {
		td = metadata(t, ctx, addrs[0], name).Topics[name]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return false, ""
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.Replicas) != int(rf) || len(p.ISR) != int(rf) {
				return false, ""
			}
		}
		return true, ""
	})
	return td
}

// TestReplicationInProcess: 3 in-process brokers, a topic with 3 replicas
// and min.insync.replicas=2, records produced with acks=all. Closing the
// brokers one after another (each Close a controlled shutdown that moves
// leadership first) loses nothing: the last broker standing serves every
// record, which it can only have by replication, since every partition was
// led by another broker at first.
func TestReplicationInProcess(t *testing.T) {
	c := newReplicatedMemCluster(t, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	addrs := bootstrap(c, 3)
	// A replication factor of 3 needs every broker in the metadata of the
	// one that creates the topic; registrations reach it in their own time.
	for _, a := range addrs {
		testenv.WaitFor(t, waitTimeout, "broker "+a+" to see 3 brokers", func() (bool, string) {
			return len(metadata(t, ctx, a).Brokers) == 3, ""
		})
	}
	const topic, parts = "replicated", 3
	td := createReplicated(t, ctx, addrs, topic, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	for p, d := range td.Partitions {
		if d.Leader != int32(p%3)+1 {
			t.Fatalf("partition %d led by %d, want %d (assignment round robin)", p, d.Leader, p%3+1)
		}
	}
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(t, ctx, cl, topic, 0, 3000, parts, nil)
	want := map[int32][]int{}
	expected(want, 0, 3000, parts, nil)

	// Broker 1 goes; produce continues on 2 and 3 (ISR of 2 = min.insync).
	c.crash(t, 1)
	live := bootstrap(c, 3)
	testenv.WaitFor(t, waitTimeout, "leadership off broker 1", func() (bool, string) {
		for _, d := range metadata(t, ctx, live[0], topic).Topics[topic].Partitions {
			if d.Leader == 1 || d.Leader < 0 {
				return false, ""
			}
		}
		return true, ""
	})
	cl2 := newClient(t, live, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(t, ctx, cl2, topic, 3000, 3000, parts, nil)
	expected(want, 3000, 3000, parts, nil)
	consumeCheck(t, ctx, live, topic, want)

	// With broker 2 gone too, the ISR is {3}: acks=all is refused with
	// NOT_ENOUGH_REPLICAS, acks=1 is accepted.
	c.crash(t, 2)
	last := bootstrap(c, 3)
	testenv.WaitFor(t, waitTimeout, "broker 3 leading everything", func() (bool, string) {
		for _, d := range metadata(t, ctx, last[0], topic).Topics[topic].Partitions {
			if d.Leader != 3 {
				return false, ""
			}
		}
		return true, ""
	})
	consumeCheck(t, ctx, last, topic, want)
	strict := newClient(t, last, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(5*time.Second), kgo.DisableIdempotentWrite())
	res := strict.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("refused")})
	if err := res.FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with an ISR of 1 and min.insync.replicas=2: err %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := newClient(t, last, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := one.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("accepted")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 with an ISR of 1: %v", err)
	}

	// Brokers 1 and 2 return, catch up and rejoin the ISR.
	c.restart(t, 1)
	c.restart(t, 2)
	all := bootstrap(c, 3)
	took := testenv.WaitFor(t, waitTimeout, "full ISRs again", func() (bool, string) {
		for _, d := range metadata(t, ctx, all[0], topic).Topics[topic].Partitions {
			if len(d.ISR) != 3 {
				return false, ""
			}
		}
		return true, ""
	})
	t.Logf("ISRs full again %v after the restarts", took.Round(time.Millisecond))
}
