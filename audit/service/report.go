package service

import (
	"sort"
	"time"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/store"
)

// Window statuses.
const (
	StatusOpen       = "open"       // still receiving reports
	StatusComplete   = "complete"   // closed, no expected tier misses records
	StatusIncomplete = "incomplete" // closed, some expected tier misses records
)

// TierReport compares one downstream tier with the producer tier.
type TierReport struct {
	Tier  string `json:"tier"`
	Count int64  `json:"count"`
	// Missing is producer - tier when positive.
	Missing int64 `json:"missing"`
	// Surplus is tier - producer when positive (duplicates, or counts a
	// crashed producer never published): never a loss.
	Surplus int64 `json:"surplus"`
	// Completeness is tier / producer; null without producer counts.
	Completeness *float64 `json:"completeness"`
	Errors       int64    `json:"errors"`
}

// WindowReport is one topic's window: what every tier counted.
type WindowReport struct {
	Topic       string    `json:"topic"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	WindowMs    int64     `json:"window_ms"`
	Closed      bool      `json:"closed"`
	Status      string    `json:"status"`
	// Producer is the producer tier's total.
	Producer int64 `json:"producer"`
	// Counts maps every tier (the producer included) to its total.
	Counts map[string]int64 `json:"counts"`
	Bytes  map[string]int64 `json:"bytes"`
	// Tiers are the downstream tiers expected in this window, by name.
	Tiers      []TierReport `json:"tiers"`
	LastUpdate time.Time    `json:"last_update"`
}

// Incomplete reports whether the window is closed and some tier misses
// records.
func (r WindowReport) Incomplete() bool { return r.Status == StatusIncomplete }

// InstanceRow is one tier instance's counts in a window.
type InstanceRow struct {
	Tier     string `json:"tier"`
	Cluster  string `json:"cluster"`
	Instance string `json:"instance"`
	Count    int64  `json:"count"`
	Bytes    int64  `json:"bytes"`
	Errors   int64  `json:"errors"`
}

// Breakdown is a window's report with its per-cluster and per-instance
// counts.
type Breakdown struct {
	WindowReport
	// Clusters maps tier -> cluster -> count.
	Clusters  map[string]map[string]int64 `json:"clusters"`
	Instances []InstanceRow               `json:"instances"`
}

// reporter turns stored windows into reports.
type reporter struct {
	grace int
	now   time.Time
}

// closed applies the closing rule of doc.go.
func (r reporter) closed(w store.Window) bool {
	end := w.Start.Add(w.Length)
	last := end
	if w.LastUpdate.After(last) {
		last = w.LastUpdate
	}
	return !r.now.Before(last.Add(time.Duration(r.grace) * w.Length))
}

// firstSeen returns, per tier, the earliest window start it reported on.
func firstSeen(all []store.Window) map[string]time.Time {
	out := map[string]time.Time{}
	for _, w := range all {
		for _, row := range w.Rows {
			if t, ok := out[row.Tier]; !ok || w.Start.Before(t) {
				out[row.Tier] = w.Start
			}
		}
	}
	return out
}

func (r reporter) report(w store.Window, first map[string]time.Time) WindowReport {
	rep := WindowReport{
		Topic: w.Topic, WindowStart: w.Start, WindowEnd: w.Start.Add(w.Length),
		WindowMs: w.Length.Milliseconds(), Closed: r.closed(w), LastUpdate: w.LastUpdate,
		Counts: map[string]int64{}, Bytes: map[string]int64{},
	}
	errs := map[string]int64{}
	for _, row := range w.Rows {
		rep.Counts[row.Tier] += row.Count
		rep.Bytes[row.Tier] += row.Bytes
		errs[row.Tier] += row.Errors
	}
	rep.Producer = rep.Counts[audit.TierProducer]
	var tiers []string
	for tier, t := range first {
		if tier != audit.TierProducer && !t.After(w.Start) {
			tiers = append(tiers, tier)
		}
	}
	sort.Strings(tiers)
	missing := false
	for _, tier := range tiers {
		n := rep.Counts[tier]
		rep.Counts[tier] = n // an expected tier that reported nothing shows 0
		tr := TierReport{Tier: tier, Count: n, Errors: errs[tier]}
		if d := rep.Producer - n; d > 0 {
			tr.Missing = d
			missing = true
		} else {
			tr.Surplus = -d
		}
		if rep.Producer > 0 {
			c := float64(n) / float64(rep.Producer)
			tr.Completeness = &c
		}
		rep.Tiers = append(rep.Tiers, tr)
	}
	switch {
	case !rep.Closed:
		rep.Status = StatusOpen
	case missing:
		rep.Status = StatusIncomplete
	default:
		rep.Status = StatusComplete
	}
	return rep
}

func (r reporter) breakdown(w store.Window, first map[string]time.Time) Breakdown {
	b := Breakdown{WindowReport: r.report(w, first), Clusters: map[string]map[string]int64{}}
	for _, row := range w.Rows {
		if b.Clusters[row.Tier] == nil {
			b.Clusters[row.Tier] = map[string]int64{}
		}
		b.Clusters[row.Tier][row.Cluster] += row.Count
		b.Instances = append(b.Instances, InstanceRow(row))
	}
	return b
}
