package audit

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/brokertest"
)

// TestKafkaPublisherRoundTrip: a Counter publishing through a real broker;
// the audit topic is auto-created and holds exactly the decoded events.
func TestKafkaPublisherRoundTrip(t *testing.T) {
	b := brokertest.New(t, brokertest.Partitions(2))
	cl := b.Client(t)
	c, err := NewCounter(Config{Tier: "producer", Cluster: "dc1", Instance: "h:1", Window: time.Second, Interval: time.Hour},
		NewKafkaPublisher(cl, ""))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Count("clicks", t0, 10, 100)
	c.Count("clicks", t0.Add(1500*time.Millisecond), 3, 30)
	c.Count("views", t0, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}

	rd := b.Client(t, kgo.ConsumeTopics(DefaultTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []Event
	for len(got) < 3 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 3 events: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			e, err := UnmarshalEvent(r.Value)
			if err != nil {
				t.Fatalf("record at %d/%d: %v", r.Partition, r.Offset, err)
			}
			if string(r.Key) != "h:1" {
				t.Errorf("key %q", r.Key)
			}
			got = append(got, e)
		})
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Topic != got[j].Topic {
			return got[i].Topic < got[j].Topic
		}
		return got[i].WindowStart.Before(got[j].WindowStart)
	})
	type short struct {
		topic        string
		window       time.Time
		count, bytes int64
	}
	var s []short
	for _, e := range got {
		s = append(s, short{e.Topic, e.WindowStart, e.Count, e.Bytes})
	}
	want := []short{{"clicks", t0, 10, 100}, {"clicks", t0.Add(time.Second), 3, 30}, {"views", t0, 1, 1}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("events %+v, want %+v", s, want)
	}
}
