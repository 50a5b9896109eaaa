package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestCompactedTopicRoundTrip produces keyed records to a compacted topic
// through a real broker with franz-go, waits for the cleaner, and consumes
// from the beginning: the last value of every key, far fewer records.
// A keyless record is refused with INVALID_RECORD and nothing is written.
func TestCompactedTopicRoundTrip(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) { c.Cleaner.Backoff = 20 * time.Millisecond })
	ctx := testenv.Context(t, 60*time.Second)
	cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "delete.retention.ms": kadm.StringPtr("0"),
	}, "state")
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}
	const n, keys = 3000, 40
	last := map[string]string{}
	for i := 0; i < n; i += 100 {
		var rs []*kgo.Record
		for j := i; j < i+100; j++ {
			k, v := fmt.Sprintf("k%d", j%keys), fmt.Sprintf("value-%d", j)
			rs = append(rs, &kgo.Record{Topic: "state", Key: []byte(k), Value: []byte(v)})
			last[k] = v
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// A tombstone for one key: gone after cleaning (delete.retention.ms=0).
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Key: []byte("k0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	delete(last, "k0")
	end := int64(n + 1)

	strict := newClient(t, b.Addr(), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	err = strict.ProduceSync(ctx, &kgo.Record{Topic: "state", Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}
	offs, err := adm.ListEndOffsets(ctx, "state")
	if o, _ := offs.Lookup("state", 0); err != nil || o.Offset != end {
		t.Fatalf("end offset %d (%v) after the refused record, want %d", o.Offset, err, end)
	}

	// Consume from the start until the cleaner has shrunk the log.
	for {
		// The checkpoint first: what is read after is at least that clean,
		// and below it each key is there once.
		var point int64
		for _, p := range b.partitions.All() {
			point = p.Log().(interface{ CleanerCheckpoint() int64 }).CleanerCheckpoint()
		}
		got, order, offsets := consumeKeyed(t, b.Addr(), end)
		if len(order) < n/4 {
			for k, v := range last {
				if got[k] != v {
					t.Fatalf("key %s = %q, want %q", k, got[k], v)
				}
			}
			seen := map[string]bool{}
			for i, k := range order {
				if offsets[i] >= point {
					break
				}
				if seen[k] {
					t.Fatalf("key %s twice below the cleaner checkpoint %d", k, point)
				}
				seen[k] = true
			}
			if len(seen) > 0 {
				checkCleanerMetrics(t, b)
				rcs, err := adm.DescribeTopicConfigs(ctx, "state")
				if err != nil {
					t.Fatal(err)
				}
				policy := ""
				for _, c := range rcs[0].Configs {
					if c.Key == "cleanup.policy" && c.Value != nil {
						policy = *c.Value
					}
				}
				if policy != "compact" {
					t.Fatalf("DescribeConfigs: cleanup.policy %q, want compact", policy)
				}
				return
			}
			// Swapped but the pass not finished: wait for its checkpoint.
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the log still holds %d of %d records", len(order), n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// consumeKeyed reads the partition from the start up to end: the last
// value of each key (tombstones delete) and the keys in order.
func consumeKeyed(t *testing.T, addr string, end int64) (map[string]string, []string, []int64) {
	t.Helper()
	got := map[string]string{}
	var order []string
	var offsets []int64
	for _, r := range consumeRecords(t, addr, "state", end) {
		order = append(order, string(r.Key))
		offsets = append(offsets, r.Offset)
		if r.Value == nil {
			delete(got, string(r.Key))
		} else {
			got[string(r.Key)] = string(r.Value)
		}
	}
	return got, order, offsets
}

// checkCleanerMetrics: after cleanings, the cleaner's metrics say so.
func checkCleanerMetrics(t *testing.T, b *testBroker) {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	for _, name := range []string{"tributary_log_cleaner_read_bytes_total", "tributary_log_cleaner_written_bytes_total",
		"tributary_log_cleaner_cleanings_total", "tributary_log_cleaner_recopy_percent",
		"tributary_log_cleaner_max_buffer_utilization_percent", "tributary_log_cleaner_max_clean_time_seconds"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v after cleanings", name, got[name])
		}
	}
	if r := got["tributary_log_cleaner_recopy_percent"]; r >= 100 {
		t.Errorf("recopy percent %v: the cleanings dropped nothing", r)
	}
	if got["tributary_log_cleaner_read_bytes_total"] <= got["tributary_log_cleaner_written_bytes_total"] {
		t.Errorf("cleaner read %v bytes, wrote %v", got["tributary_log_cleaner_read_bytes_total"], got["tributary_log_cleaner_written_bytes_total"])
	}
	if _, ok := got["tributary_log_cleaner_max_dirty_percent"]; !ok {
		t.Error("no max_dirty_percent gauge")
	}
}
