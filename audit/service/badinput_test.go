package service

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestBadInputSkipped: garbage bytes, a truncated event, an unknown
// version, counts from the future, negative counts and counts for windows
// past the retention on the audit topic are each skipped, counted by
// reason and logged once with cluster, partition and offset; the good
// event after them is counted, and a restart neither re-reads nor re-logs
// them.
func TestBadInputSkipped(t *testing.T) {
	b := brokertest.New(t, brokertest.Partitions(2))
	dc1 := b.Addr()
	dir := t.TempDir()
	good, err := audit.MarshalEvent(audit.Event{ID: "good-1", Tier: "producer", Cluster: "dc1", Instance: "x",
		Topic: "clicks", WindowStart: audit.WindowStart(time.Now(), time.Minute), Window: time.Minute, Count: 42})
	if err != nil {
		t.Fatal(err)
	}
	future := strings.Replace(string(good), `"id":"good-1"`, `"id":"future-1"`, 1)
	future = regexp.MustCompile(`"window_start":"[^"]*"`).ReplaceAllString(future, `"window_start":"2100-01-01T00:00:00Z"`)
	expired := strings.Replace(string(good), `"id":"good-1"`, `"id":"old-1"`, 1)
	expired = regexp.MustCompile(`"window_start":"[^"]*"`).ReplaceAllString(expired, `"window_start":"2001-01-01T00:00:00Z"`)
	negative := strings.Replace(strings.Replace(string(good), `"count":42`, `"count":-5`, 1), `"id":"good-1"`, `"id":"neg-1"`, 1)
	bad := []struct{ value, reason string }{
		{"\x00\x01\xfe garbage \xff", reasonDecode},
		{string(good[:len(good)/2]), reasonDecode},
		{strings.Replace(string(good), `"v":1`, `"v":7`, 1), reasonVersion},
		{future, reasonFuture},
		{negative, reasonInvalid},
		{expired, reasonExpired},
	}
	cl := b.Client(t, kgo.DefaultProduceTopic(audit.DefaultTopic), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, b := range bad {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(b.value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: good}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	runOnce := func(want int64) *testService {
		svc := newService(t, dir, 2, Cluster{Name: "dc1", Brokers: []string{dc1}})
		testenv.WaitFor(t, time.Minute, "the good events counted", func() (bool, string) {
			reps, err := svc.Windows("clicks", time.Time{}, time.Time{})
			if err != nil || len(reps) != 1 {
				return false, fmt.Sprint(reps, err)
			}
			return reps[0].Producer == want, fmt.Sprint(reps[0].Counts)
		})
		// The consumed counter is added to after the store applied the
		// batch, so a report can show the counts before the counter does.
		testenv.WaitFor(t, time.Minute, "the consumed counter", func() (bool, string) {
			got := svc.metric(t, "audit_service_events_consumed_total", "cluster", "dc1")
			return got >= 1, fmt.Sprint(got)
		})
		return svc
	}
	svc := runOnce(42)
	want := map[string]float64{reasonDecode: 2, reasonVersion: 1, reasonFuture: 1, reasonInvalid: 1, reasonExpired: 1}
	for reason, n := range want {
		if got := svc.metric(t, "audit_service_bad_events_total", "cluster", "dc1", "reason", reason); got != n {
			t.Errorf("bad events %s = %v, want %v", reason, got, n)
		}
	}
	logs := svc.logs.String()
	for i, b := range bad {
		line := fmt.Sprintf(`cluster=dc1 partition=0 offset=%d reason=%s`, i, b.reason)
		if strings.Count(logs, line) != 1 {
			t.Errorf("log line %q appears %d times in:\n%s", line, strings.Count(logs, line), logs)
		}
	}
	if got := svc.metric(t, "audit_service_events_consumed_total", "cluster", "dc1"); got != 1 {
		t.Errorf("consumed %v, want 1", got)
	}

	// Restarted on the same store: it resumes after the bad records, so
	// it neither logs nor counts them again, and the good event counts
	// once: a later event (read after them, partitions are read in order)
	// brings the total to 42 + 8.
	svc.stop()
	good2 := strings.Replace(strings.Replace(string(good), `"count":42`, `"count":8`, 1), `"id":"good-1"`, `"id":"good-2"`, 1)
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(good2)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	svc = runOnce(50)
	if strings.Contains(svc.logs.String(), "skipping bad audit event") {
		t.Errorf("restart logged bad events again:\n%s", svc.logs.String())
	}
	if got := svc.metric(t, "audit_service_bad_events_total", "cluster", "dc1", "reason", reasonDecode); got != 0 {
		t.Errorf("restart counted %v bad events again", got)
	}
	if got := svc.metric(t, "audit_service_events_consumed_total", "cluster", "dc1"); got != 1 {
		t.Errorf("restart consumed %v events, want only the new one", got)
	}
}
