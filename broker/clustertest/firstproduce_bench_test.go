package clustertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/kafkatest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// BenchmarkFirstProduceRF3 compares, on 3 in-process brokers, the acks=all
// latency of the first record into a topic of 3 replicas created just
// before with that of a record into a topic whose followers already fetch.
// Each op creates a fresh topic and produces one record into it, one into
// a fresh topic of 1 replica (what a new topic costs without followers: the
// client's metadata look-up, the leader's new log) and one into the warmed
// topic. A fresh partition's followers must learn of it
// and start fetching it before the record is committed; a follower whose
// fetcher is long-polling the leader for its other partitions must not
// wait out that poll (replica.fetch.wait.max.ms, 500 ms) first.
//
// The client's part of a first produce is a metadata request for the new
// topic, which kgo sends at most every 10 ms (its least MetadataMinAge):
// so each op also times an acks=all Produce request sent straight to the
// leader of a second fresh RF=3 topic and of the warmed topic, through the
// same client's connection (no metadata look-up): what the brokers take.
//
// Reported: fresh-p50/p99-ms, fresh-rf1-p50/p99-ms, warm-p50/p99-ms,
// fresh/warm-p99, and the direct requests' fresh-direct-p50/p99-ms,
// warm-direct-p50/p99-ms and fresh/warm-direct-p99.
func BenchmarkFirstProduceRF3(b *testing.B) {
	c := brokertest.NewCluster(b, 3, brokertest.Partitions(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.MetadataMinAge(10*time.Millisecond), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		b.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	create := func(name string, rf int16) {
		b.Helper()
		minISR := strconv.Itoa(min(int(rf), 2))
		resp, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"min.insync.replicas": &minISR}, name)
		if err != nil || resp.Err != nil {
			b.Fatalf("create topic %s: %v %v", name, err, resp.Err)
		}
		testenv.WaitFor(b, 2*time.Minute, "leader and full ISR of "+name, func() (bool, string) {
			md, err := adm.Metadata(ctx, name)
			if err != nil {
				return false, err.Error()
			}
			td := md.Topics[name]
			if td.Err != nil || len(td.Partitions) != 1 {
				return false, fmt.Sprint(td.Err)
			}
			p := td.Partitions[0]
			return p.Leader >= 0 && len(p.ISR) == int(rf), fmt.Sprintf("leader %d, ISR %v", p.Leader, p.ISR)
		})
	}
	leaderOf := func(topic string) int32 {
		b.Helper()
		md, err := adm.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil {
			b.Fatalf("metadata of %s: %v %v", topic, err, md.Topics[topic].Err)
		}
		return md.Topics[topic].Partitions[0].Leader
	}
	// direct sends one acks=all record to partition 0 of topic on leader.
	direct := func(topic string, leader int32) time.Duration {
		b.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = kafkatest.Batch(time.Now().UnixMilli(), -1, -1, -1, "first")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		took := time.Since(start)
		if err != nil {
			b.Fatalf("produce to %s on broker %d: %v", topic, leader, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce to %s on broker %d: %v", topic, leader, kerr.ErrorForCode(code))
		}
		return took
	}
	produce := func(topic string) time.Duration {
		b.Helper()
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
			b.Fatalf("produce to %s: %v", topic, err)
		}
		return time.Since(start)
	}
	create("warm", 3)
	for range 20 {
		produce("warm")
	}
	warmLeader := leaderOf("warm")
	var fresh, single, warm, freshDirect, warmDirect []time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("fresh-%d", i)
		b.StopTimer()
		create(name, 3)
		create(name+"-rf1", 1)
		create(name+"-direct", 3)
		leader := leaderOf(name + "-direct")
		b.StartTimer()
		fresh = append(fresh, produce(name))
		single = append(single, produce(name+"-rf1"))
		warm = append(warm, produce("warm"))
		freshDirect = append(freshDirect, direct(name+"-direct", leader))
		warmDirect = append(warmDirect, direct("warm", warmLeader))
	}
	b.StopTimer()
	q := func(d []time.Duration, f float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(f*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(fresh, 0.5), "fresh-p50-ms")
	b.ReportMetric(q(fresh, 0.99), "fresh-p99-ms")
	b.ReportMetric(q(single, 0.5), "fresh-rf1-p50-ms")
	b.ReportMetric(q(single, 0.99), "fresh-rf1-p99-ms")
	b.ReportMetric(q(warm, 0.5), "warm-p50-ms")
	b.ReportMetric(q(warm, 0.99), "warm-p99-ms")
	b.ReportMetric(q(fresh, 0.99)/q(warm, 0.99), "fresh/warm-p99")
	b.ReportMetric(q(freshDirect, 0.5), "fresh-direct-p50-ms")
	b.ReportMetric(q(freshDirect, 0.99), "fresh-direct-p99-ms")
	b.ReportMetric(q(warmDirect, 0.5), "warm-direct-p50-ms")
	b.ReportMetric(q(warmDirect, 0.99), "warm-direct-p99-ms")
	b.ReportMetric(q(freshDirect, 0.99)/q(warmDirect, 0.99), "fresh/warm-direct-p99")
}
