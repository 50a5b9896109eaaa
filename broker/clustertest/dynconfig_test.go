package clustertest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// describeBrokerConfig asks broker addr for one of its configs.
func describeBrokerConfig(t *testing.T, ctx context.Context, addr string, id int32, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)), []string{name}
	req.Resources, req.IncludeSynonyms = append(req.Resources, rr), true
	resp, err := req.RequestWith(ctx, newClient(t, []string{addr}))
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe %s of broker %d: %v %+v", name, id, err, resp)
	}
	return resp.Resources[0].Configs[0]
}

func alterBrokerConfig(ctx context.Context, adm *kadm.Client, name, key, value string) error {
	cs := []kadm.AlterConfig{{Name: key, Value: kadm.StringPtr(value)}}
	var res kadm.AlterConfigsResponses
	var err error
	if name == "" {
		res, err = adm.AlterBrokerConfigs(ctx, cs)
	} else {
		id, _ := strconv.Atoi(name)
		res, err = adm.AlterBrokerConfigs(ctx, cs, int32(id))
	}
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// TestDynamicBrokerConfigs: log.retention.ms set as the cluster-wide
// dynamic default reaches every broker without a restart (DescribeConfigs
// on each reports it as DYNAMIC_DEFAULT_BROKER_CONFIG, and retention
// deletes old segments of partitions led by each broker); a per-broker
// value wins on that broker only; unknown and read-only keys are
// INVALID_CONFIG and change nothing.
func TestDynamicBrokerConfigs(t *testing.T) {
	c := newMemClusterWith(t, 3, func(cfg *config.Config) {
		cfg.RetentionCheckInterval = 200 * time.Millisecond
		cfg.SegmentBytes = 16 << 10
	})
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, addrs))

	for _, bad := range []string{"no.such.config", "broker.id", "log.dirs"} {
		err := alterBrokerConfig(ctx, adm, "", bad, "1")
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("altering %s: %v, want INVALID_CONFIG", bad, err)
		}
	}
	if err := alterBrokerConfig(ctx, adm, "", "log.retention.ms", "soon"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("log.retention.ms=soon: %v, want INVALID_CONFIG", err)
	}

	const topic = "dynretention"
	td := createReplicated(t, ctx, addrs, topic, 3, 1, nil)
	cl := newClient(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for round := 0; round < 6; round++ {
		produce(t, ctx, cl, topic, round*600, 600, 3, nil)
	}

	if err := alterBrokerConfig(ctx, adm, "", "log.retention.ms", "1000"); err != nil {
		t.Fatalf("set the default log.retention.ms: %v", err)
	}
	for id := int32(1); id <= 3; id++ {
		testenv.WaitFor(t, waitTimeout, "broker "+strconv.Itoa(int(id))+" applying the dynamic default", func() (bool, string) {
			e := describeBrokerConfig(t, ctx, c.addr(id), id, "log.retention.ms")
			return e.Value != nil && *e.Value == "1000" && e.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig,
				"value " + *e.Value + " source " + e.Source.String()
		})
	}
	testenv.WaitFor(t, waitTimeout, "retention deleting old segments on every leader", func() (bool, string) {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := range td.Partitions {
			o, ok := starts.Lookup(topic, p)
			if !ok || o.Err != nil || o.Offset == 0 {
				return false, "partition " + strconv.Itoa(int(p)) + " still starts at 0"
			}
		}
		return true, ""
	})

	if err := alterBrokerConfig(ctx, adm, "2", "log.retention.ms", "3600000"); err != nil {
		t.Fatalf("set broker 2's log.retention.ms: %v", err)
	}
	testenv.WaitFor(t, waitTimeout, "broker 2's own value", func() (bool, string) {
		e := describeBrokerConfig(t, ctx, c.addr(2), 2, "log.retention.ms")
		if len(e.ConfigSynonyms) < 2 || e.ConfigSynonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			return false, "synonyms"
		}
		return *e.Value == "3600000" && e.Source == kmsg.ConfigSourceDynamicBrokerConfig, *e.Value
	})
	if e := describeBrokerConfig(t, ctx, c.addr(1), 1, "log.retention.ms"); *e.Value != "1000" {
		t.Fatalf("broker 1's log.retention.ms is %s after broker 2's override, want 1000", *e.Value)
	}
}

// TestReplicationThrottle: a follower catching up 20 MB with the leader and
// follower replication throttles at 2 MB/s takes at least 0.7 x 10 s.
func TestReplicationThrottle(t *testing.T) {
	t.Parallel() // its own cluster; bounded from below only (the throttle)
	c := newMemCluster(t, 3)
	addrs := bootstrap(c, 3)
	ctx := testenv.Context(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, addrs))
	const topic, size, total, rate = "throttled", 100 << 10, 20 << 20, 2 << 20
	td := createReplicated(t, ctx, addrs, topic, 1, 1, nil)
	leader := td.Partitions[0].Leader
	follower := leader%3 + 1
	cl := newClient(t, addrs, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < total/size; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value(i, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
		if err := alterBrokerConfig(ctx, adm, "", k, strconv.Itoa(rate)); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
	}
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr("0:" + strconv.Itoa(int(leader)))},
		{Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr("0:" + strconv.Itoa(int(follower)))},
	}, topic)
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("set throttled replicas: %v", err)
	}
	// Every broker applies the rates and the topic's lists before the move.
	for id := int32(1); id <= 3; id++ {
		testenv.WaitFor(t, waitTimeout, "throttle rate on broker "+strconv.Itoa(int(id)), func() (bool, string) {
			e := describeBrokerConfig(t, ctx, c.addr(id), id, "follower.replication.throttled.rate")
			return *e.Value == strconv.Itoa(rate), *e.Value
		})
	}
	set := kadm.AlterPartitionAssignmentsReq{}
	set.Assign(topic, 0, []int32{leader, follower})
	start := time.Now()
	if r, err := adm.AlterPartitionAssignments(ctx, set); err != nil || r.Error() != nil {
		t.Fatalf("reassign: %v %v", err, r.Error())
	}
	testenv.WaitFor(t, 2*time.Minute, "the follower in the ISR", func() (bool, string) {
		d := metadata(t, ctx, addrs[0], topic).Topics[topic].Partitions[0]
		return len(d.ISR) == 2, ""
	})
	took := time.Since(start)
	floor := time.Duration(0.7 * float64(total) / float64(rate) * float64(time.Second))
	t.Logf("caught up %d MB in %v at a %d MB/s throttle (%.2f MB/s)", total>>20, took, rate>>20, float64(total)/(1<<20)/took.Seconds())
	if took < floor {
		t.Fatalf("caught up in %v, faster than the throttle allows (at least %v)", took, floor)
	}
}
