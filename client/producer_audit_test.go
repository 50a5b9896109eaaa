package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// readAuditEvents reads every event of the audit topic until want records
// (summed counts) of tier are seen.
func readAuditEvents(t *testing.T, bootstrap []string, tier string, want int64) []audit.Event {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ConsumeTopics(audit.DefaultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testenv.Context(t, 30*time.Second)
	var out []audit.Event
	var sum int64
	for sum < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("audit events sum to %d of %d: %v", sum, want, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			e, err := audit.UnmarshalEvent(r.Value)
			if err != nil {
				t.Fatalf("audit record %d/%d: %v", r.Partition, r.Offset, err)
			}
			if e.Tier == tier {
				out = append(out, e)
				sum += e.Count
			}
		})
	}
	return out
}

// TestProducerAuditsAcknowledgedRecords: the producer tier counts what was
// acknowledged, per window of the records' own timestamps, and publishes
// it on Close; failed sends are not counted.
func TestProducerAuditsAcknowledgedRecords(t *testing.T) {
	cluster := brokertest.New(t)
	cluster.CreateTopic(t, "clicks", 2)
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Linger: time.Millisecond,
		Audit: ProducerAudit{Cluster: "dc1", Window: time.Second, Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Context(t, time.Minute)
	// kgo's delivery timeout runs from a record's timestamp: keep them recent.
	t0 := audit.WindowStart(time.Now(), time.Second).Add(-3 * time.Second)
	for i := 0; i < 300; i++ {
		// 100 records in each of three 1 s windows, 10 bytes of value each.
		ts := t0.Add(time.Duration(i/100)*time.Second + time.Duration(i%100)*time.Millisecond)
		p.SendAsync(ctx, &Message{Topic: "clicks", Value: fmt.Appendf(nil, "value-%04d", i), Timestamp: ts}, func(_ *Message, err error) {
			if err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	// A record that is never acknowledged (no partition 7) is not counted.
	bad := &Message{Topic: "clicks", Partition: 7, Value: []byte("x"), Timestamp: t0}
	badP, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Partitioner: ManualPartitioner(),
		Audit: ProducerAudit{Cluster: "dc1", Window: time.Second, Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if err := badP.Send(ctx, bad); err == nil {
		t.Fatal("send to partition 7 of 2 succeeded")
	}
	if err := badP.Close(ctx); err != nil {
		t.Fatalf("close of the producer that sent nothing: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	events := readAuditEvents(t, cluster.Addrs(), audit.TierProducer, 300)
	got := map[time.Time][2]int64{}
	for _, e := range events {
		if e.Cluster != "dc1" || e.Topic != "clicks" || e.Window != time.Second || e.Instance != audit.DefaultInstance() {
			t.Fatalf("event %+v", e)
		}
		v := got[e.WindowStart]
		got[e.WindowStart] = [2]int64{v[0] + e.Count, v[1] + e.Bytes}
	}
	want := map[time.Time][2]int64{t0: {100, 1000}, t0.Add(time.Second): {100, 1000}, t0.Add(2 * time.Second): {100, 1000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audited per window %v, want %v", got, want)
	}
}

// TestProducerAuditDisabled: with audit.enable=false nothing reaches the
// audit topic (it is not even created).
func TestProducerAuditDisabled(t *testing.T) {
	cluster := brokertest.New(t)
	cluster.CreateTopic(t, "quiet", 1)
	p, err := NewProducer(ProducerConfig{Brokers: cluster.Addrs(), Audit: ProducerAudit{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Context(t, time.Minute)
	for i := 0; i < 10; i++ {
		if err := p.Send(ctx, &Message{Topic: "quiet", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p.counter != nil {
		t.Fatal("disabled audit still has a counter")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(audit.DefaultTopic) {
		t.Fatalf("audit topic exists with audit disabled: %v", topics.Names())
	}
}

func TestProducerAuditConfigValidate(t *testing.T) {
	err := ProducerConfig{Brokers: []string{"h:1"}, Audit: ProducerAudit{Window: 1500 * time.Microsecond}}.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, audit.ErrInvalidConfig) {
		t.Fatalf("bad audit window: %v", err)
	}
	if err := (ProducerConfig{Brokers: []string{"h:1"}, Audit: ProducerAudit{Disable: true, Window: -1}}).Validate(); err != nil {
		t.Fatalf("disabled audit is not validated: %v", err)
	}
	_ = context.Background
}
