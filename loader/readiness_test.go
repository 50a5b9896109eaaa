package loader_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
)

// auditHTTP is the audit service's HTTP API as compaction's Audit.
type auditHTTP struct{ c *service.Client }

func (a auditHTTP) Windows(ctx context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	return a.c.LoaderWindows(ctx, topic, from, to)
}

// syncCatalog records the partitions of each topic's last sync.
type syncCatalog struct {
	mu    sync.Mutex
	parts map[string][]hours.Partition
}

func (c *syncCatalog) Sync(_ context.Context, topic string, want []hours.Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts[topic] = want
	return nil
}

// TestReadinessWithTheAuditService: producers (audited by the client
// library) send an hour of records of which 17 are not Avro, so the real
// loader puts them in _errors and its audit tier counts 17 fewer; the real
// audit service sums both tiers; compaction asks it over HTTP. At
// completeness.threshold 1.0 the hour never becomes ready, and it is
// published ready-incomplete with a shortfall of 17 at
// completeness.timeout; at 0.999 an hour of 20,000 records becomes ready
// (and is compacted, and registered), a small one does not.
func TestReadinessWithTheAuditService(t *testing.T) {
	c := newCluster(t)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	sizes := map[string]int{"small": 1000, "large": 20000}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for topic, n := range sizes {
		c.CreateTopic(t, topic, 1)
		// kgo counts the delivery timeout from a record's timestamp: these are hours old.
		p, err := client.NewProducer(client.ProducerConfig{Brokers: []string{c.Addr()}, Linger: 5 * time.Millisecond, DeliveryTimeout: 48 * time.Hour,
			Audit: client.ProducerAudit{Cluster: "test", Instance: "p-" + topic, Window: time.Hour, Interval: 200 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		var failed error
		var mu sync.Mutex
		for i := 0; i < n+17; i++ {
			v := []byte("not avro")
			if i%(n/17) != 0 || i/(n/17) >= 17 {
				if v, err = c.ser.Encode(ctx, topic+"-value", schemaV1, map[string]any{"id": int64(i), "page": page(i)}); err != nil {
					t.Fatal(err)
				}
			}
			ts := hour.Add(time.Duration(i) * time.Hour / time.Duration(n+17))
			p.SendAsync(ctx, &client.Message{Topic: topic, Value: v, Timestamp: ts}, func(_ *client.Message, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			})
		}
		if err := p.Close(ctx); err != nil || failed != nil {
			t.Fatalf("produce %s: %v %v", topic, err, failed)
		}
	}
	fsys, base := filesys.Local(), t.TempDir()
	cfg := baseConfig(c, "load", "small|large", "file://"+base)
	cfg.AuditWindow = time.Hour
	cfg.Logger = slog.New(slog.DiscardHandler)
	l, err := loader.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(ctx)
	l.Close()
	if err != nil || sum.Records != int64(sizes["small"]+sizes["large"]) || sum.Errors != 34 {
		t.Fatalf("loader run %+v, %v: want every Avro record loaded and 17 errors per topic", sum, err)
	}

	svc, err := service.New(service.Config{Clusters: []service.Cluster{{Name: "test", Brokers: []string{c.Addr()}}},
		Dir: t.TempDir(), Listen: "127.0.0.1:0", PartitionRefresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svcCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(svcCtx) }()
	t.Cleanup(func() { stop(); <-done })
	ac, err := service.NewClient("http://"+svc.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for topic, n := range sizes {
		testenv.WaitFor(t, 2*time.Minute, "the audit service's counts of "+topic, func() (bool, string) {
			ws, err := ac.LoaderWindows(ctx, topic, hour, hour.Add(time.Hour))
			if err != nil || len(ws) != 1 {
				return false, fmt.Sprint(ws, err)
			}
			return ws[0].Producer == int64(n+17) && ws[0].Loader == int64(n), fmt.Sprintf("%+v", ws[0])
		})
	}

	cat := &syncCatalog{parts: map[string][]hours.Partition{}}
	run := func(threshold float64, now time.Time) compact.Summary {
		t.Helper()
		cp, err := compact.New(compact.Config{FS: fsys, Base: base, Delay: time.Minute, Audit: auditHTTP{ac},
			Threshold: threshold, Timeout: 6 * time.Hour, Catalog: cat, Now: func() time.Time { return now },
			ClosedThrough: func(ctx context.Context) (time.Time, error) { return loader.CommittedThrough(ctx, fsys, base, "load") }})
		if err != nil {
			t.Fatal(err)
		}
		s, err := cp.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	state := func(topic string) (string, *hours.Success) {
		t.Helper()
		list, err := hours.List(fsys, base, topic)
		if err != nil || len(list) != 1 {
			t.Fatalf("%s: partitions %+v, %v", topic, list, err)
		}
		st, err := hours.StatusOf(fsys, list[0], time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return st.State, st.Success
	}

	if s := run(1.0, time.Now()); len(s.HoursReady)+len(s.HoursIncomplete) != 0 || s.HoursCompacted != 0 {
		t.Fatalf("threshold 1.0: %+v: want nothing ready", s)
	}
	for topic := range sizes {
		if st, _ := state(topic); st != hours.StateWaiting || len(cat.parts[topic]) != 0 {
			t.Fatalf("threshold 1.0: %s is %s, catalog %v: want waiting-for-audit, unpublished", topic, st, cat.parts[topic])
		}
	}
	if s := run(0.999, time.Now()); len(s.HoursReady) != 1 || s.HoursCompacted != 1 {
		t.Fatalf("threshold 0.999: %+v: want the large hour ready and compacted", s)
	}
	if st, s := state("large"); st != hours.StateCompacted || s.State != hours.StateReady || s.Basis != hours.BasisAudit ||
		s.Shortfall != 17 || s.Producer != 20017 || s.Loader != 20000 || len(cat.parts["large"]) != 1 || cat.parts["large"][0].Format != "parquet" {
		t.Fatalf("large at 0.999: %s %+v, catalog %+v", st, s, cat.parts["large"])
	}
	if st, _ := state("small"); st != hours.StateWaiting {
		t.Fatalf("small at 0.999: %s, want waiting-for-audit (983/1000 short of 0.999)", st)
	}
	if s := run(1.0, hour.Add(time.Hour+6*time.Hour)); len(s.HoursIncomplete) != 1 || s.HoursCompacted != 1 {
		t.Fatalf("at the timeout: %+v: want the small hour published ready-incomplete and compacted", s)
	}
	if st, s := state("small"); st != hours.StateCompacted || s.State != hours.StateReadyIncomplete || s.Basis != hours.BasisTimeout ||
		s.Shortfall != 17 || s.Producer != 1017 || s.Loader != 1000 || len(cat.parts["small"]) != 1 {
		t.Fatalf("small at the timeout: %s %+v, catalog %+v", st, s, cat.parts["small"])
	}
	// The audit service's partitions endpoint needs the loader output;
	// the command's report shows the same states.
	rep, err := hours.Report(ctx, fsys, base, "small", time.Now(), time.Minute, auditHTTP{ac})
	if err != nil || len(rep) != 1 || rep[0].State != hours.StateCompacted || rep[0].Shortfall != 17 || !rep[0].Audited {
		t.Fatalf("report %+v, %v", rep, err)
	}
}
