package service

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

const testWindow = 2 * time.Second

// pipeline is the known data set of the scenario tests: 3 producers on 2
// clusters over 3 windows, a "reader" tier that counts everything and a
// "lossy" tier that drops 17 records of the middle window in dc1.
type pipeline struct {
	dc1, dc2 string
	t0       time.Time
	records  int
	want     map[time.Time]int64 // producer total per window
	perDC    map[string]map[time.Time]int64
}

func runPipeline(t *testing.T, records int) *pipeline {
	t.Helper()
	// A single broker stands for each cluster; the audit topic it
	// auto-creates has 2 partitions, as "clicks" has.
	dc1, dc2 := brokertest.New(t, brokertest.Partitions(2)), brokertest.New(t, brokertest.Partitions(2))
	p := &pipeline{dc1: dc1.Addr(), dc2: dc2.Addr(), records: records,
		want: map[time.Time]int64{}, perDC: map[string]map[time.Time]int64{}}
	dc1.CreateTopic(t, "clicks", 2)
	dc2.CreateTopic(t, "clicks", 2)
	// Three whole windows in the recent past: kgo times out records whose
	// timestamp is older than the delivery timeout.
	p.t0 = audit.WindowStart(time.Now(), testWindow).Add(-3 * testWindow)
	return p
}

func (p *pipeline) produce(t *testing.T) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	shares := []struct {
		name, addr, instance string
		n                    int
	}{
		{"dc1", p.dc1, "producer-1@dc1", p.records / 3},
		{"dc1", p.dc1, "producer-2@dc1", p.records / 3},
		{"dc2", p.dc2, "producer-3@dc2", p.records - 2*(p.records/3)},
	}
	for _, sh := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := produceSpread(t, sh.addr, sh.name, sh.instance, "clicks", sh.n, 3, p.t0, testWindow)
			mu.Lock()
			defer mu.Unlock()
			if p.perDC[sh.name] == nil {
				p.perDC[sh.name] = map[time.Time]int64{}
			}
			for w, n := range got {
				p.want[w] += n
				p.perDC[sh.name][w] += n
			}
		}()
	}
	wg.Wait()
}

func (p *pipeline) consume(t *testing.T) {
	t.Helper()
	dcRecords := map[string]int{"dc1": 2 * (p.records / 3), "dc2": p.records - 2*(p.records/3)}
	addrs := map[string]string{"dc1": p.dc1, "dc2": p.dc2}
	lossyWindow := p.t0.Add(testWindow)
	var wg sync.WaitGroup
	for _, dc := range []string{"dc1", "dc2"} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			consumeTier(t, addrs[dc], dc, "clicks", "reader", testWindow, dcRecords[dc], nil)
		}()
		go func() {
			defer wg.Done()
			dropped := 0
			consumeTier(t, addrs[dc], dc, "clicks", "lossy", testWindow, dcRecords[dc], func(r *kgo.Record) bool {
				if dc == "dc1" && dropped < 17 && audit.WindowStart(r.Timestamp, testWindow).Equal(lossyWindow) {
					dropped++
					return true
				}
				return false
			})
		}()
	}
	wg.Wait()
}

// waitClosed waits until the service reports the three windows closed
// with the expected producer totals.
func waitClosed(t *testing.T, s *Service, p *pipeline) []WindowReport {
	t.Helper()
	var reps []WindowReport
	testenv.WaitFor(t, 2*time.Minute, "3 closed windows with every producer count", func() (bool, string) {
		var err error
		reps, err = s.Windows("clicks", time.Time{}, time.Time{})
		if err != nil {
			return false, err.Error()
		}
		if len(reps) != 3 {
			return false, fmt.Sprintf("%d windows", len(reps))
		}
		for _, r := range reps {
			if !r.Closed || r.Producer != p.want[r.WindowStart] || r.Counts["reader"] != p.want[r.WindowStart] {
				return false, fmt.Sprintf("window %s closed=%v producer=%d reader=%d want %d", r.WindowStart, r.Closed, r.Producer, r.Counts["reader"], p.want[r.WindowStart])
			}
		}
		return true, ""
	})
	return reps
}

// checkReports asserts the scenario's report: every window closed, the
// reader 100% everywhere, the lossy tier 17 short in the middle window only.
func checkReports(t *testing.T, reps []WindowReport, p *pipeline) {
	t.Helper()
	var total int64
	for i, r := range reps {
		start := p.t0.Add(time.Duration(i) * testWindow)
		if !r.WindowStart.Equal(start) || !r.WindowEnd.Equal(start.Add(testWindow)) || r.Topic != "clicks" {
			t.Fatalf("window %d: %+v", i, r)
		}
		total += r.Producer
		if len(r.Tiers) != 2 || r.Tiers[0].Tier != "lossy" || r.Tiers[1].Tier != "reader" {
			t.Fatalf("window %s tiers %+v", start, r.Tiers)
		}
		reader, lossy := r.Tiers[1], r.Tiers[0]
		if reader.Missing != 0 || reader.Surplus != 0 || reader.Completeness == nil || *reader.Completeness != 1 {
			t.Errorf("window %s reader %+v", start, reader)
		}
		wantMissing := int64(0)
		if i == 1 {
			wantMissing = 17
		}
		if lossy.Missing != wantMissing || lossy.Count != r.Producer-wantMissing || lossy.Surplus != 0 {
			t.Errorf("window %s lossy %+v, want %d missing", start, lossy, wantMissing)
		}
		wantStatus := StatusComplete
		if i == 1 {
			wantStatus = StatusIncomplete
		}
		if r.Status != wantStatus {
			t.Errorf("window %s status %s, want %s", start, r.Status, wantStatus)
		}
	}
	if total != int64(p.records) {
		t.Fatalf("producer total %d, want %d", total, p.records)
	}
}

// TestReportPinpointsMissingRecords is the main scenario, in
// process: the report shows every window closed, 100% for the reader tier
// and exactly the window, topic and 17 records the lossy tier dropped; the
// breakdown splits counts by cluster; /metrics shows the last closed
// window.
func TestReportPinpointsMissingRecords(t *testing.T) {
	records := 100_000
	if full() {
		records = 1_000_000
	}
	p := runPipeline(t, records)
	svc := newService(t, t.TempDir(), 2, Cluster{Name: "dc1", Brokers: []string{p.dc1}}, Cluster{Name: "dc2", Brokers: []string{p.dc2}})
	p.produce(t)
	p.consume(t)
	reps := waitClosed(t, svc.Service, p)
	checkReports(t, reps, p)

	mid := p.t0.Add(testWindow)
	b, err := svc.Breakdown("clicks", mid)
	if err != nil {
		t.Fatal(err)
	}
	for _, dc := range []string{"dc1", "dc2"} {
		if got := b.Clusters["producer"][dc]; got != p.perDC[dc][mid] {
			t.Errorf("breakdown producer %s = %d, want %d", dc, got, p.perDC[dc][mid])
		}
		if got := b.Clusters["reader"][dc]; got != p.perDC[dc][mid] {
			t.Errorf("breakdown reader %s = %d, want %d", dc, got, p.perDC[dc][mid])
		}
	}
	if got := b.Clusters["lossy"]["dc1"]; got != p.perDC["dc1"][mid]-17 {
		t.Errorf("breakdown lossy dc1 = %d, want %d", got, p.perDC["dc1"][mid]-17)
	}
	rows := map[string]int64{}
	for _, row := range b.Instances {
		rows[row.Tier+"/"+row.Cluster+"/"+row.Instance] = row.Count
	}
	if rows["lossy/dc1/lossy@dc1"] != p.perDC["dc1"][mid]-17 || rows["producer/dc2/producer-3@dc2"] != p.perDC["dc2"][mid] ||
		rows["producer/dc1/producer-1@dc1"]+rows["producer/dc1/producer-2@dc1"] != p.perDC["dc1"][mid] ||
		rows["producer/dc1/producer-1@dc1"] == 0 || rows["producer/dc1/producer-2@dc1"] == 0 || len(rows) != 7 {
		t.Errorf("instance rows %v (dc1 %d, dc2 %d in the window)", rows, p.perDC["dc1"][mid], p.perDC["dc2"][mid])
	}

	last := p.t0.Add(2 * testWindow)
	if got := svc.metric(t, "audit_last_closed_window_start_seconds", "topic", "clicks"); got != float64(last.Unix()) {
		t.Errorf("last closed window metric %v, want %v", got, last.Unix())
	}
	if got := svc.metric(t, "audit_window_completeness", "topic", "clicks", "tier", "reader"); got != 1 {
		t.Errorf("reader completeness metric %v", got)
	}
	if got := svc.metric(t, "audit_service_events_consumed_total", "cluster", "dc1"); got == 0 {
		t.Errorf("no events consumed from dc1 in metrics")
	}
	if got := svc.metric(t, "audit_service_lag_records", "cluster", "dc2"); got != 0 {
		t.Errorf("lag on dc2 %v after catching up", got)
	}
}
