package hours

import (
	"context"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// AuditLookback is how far before the first hour waiting for the audit
// its windows are asked for: an audit window overlapping an hour starts at
// most this long before it.
const AuditLookback = 24 * time.Hour

// Audit gives the audit service's counts: for topic, every audit window
// starting in [from, to) with the producer and the loader tiers' totals.
// Compaction judges readiness by it; Report adds its counts to the
// partitions still waiting.
type Audit interface {
	Windows(ctx context.Context, topic string, from, to time.Time) ([]AuditWindow, error)
}

// HourReport is one partition's state (Status) with its audit
// counts: those its _SUCCESS recorded when it is ready, else the audit's
// current ones (none without an audit).
type HourReport struct {
	Status
	Producer  int64 `json:"producer"`
	Loader    int64 `json:"loader"`
	Shortfall int64 `json:"shortfall"`
	// Audited says whether the counts come from the audit.
	Audited bool `json:"audited"`
}

// Report lists topic's partitions with their states and counts: what
// `tributary loader hours` prints and the audit service serves. closed
// and delay are as for Statuses (compaction's Config.ClosedThrough value
// and Config.Delay); audit may be nil.
func Report(ctx context.Context, fsys filesys.FS, base, topic string, closed time.Time, delay time.Duration, audit Audit) ([]HourReport, error) {
	all, err := Statuses(fsys, base, topic, closed, delay)
	if err != nil {
		return nil, err
	}
	out := make([]HourReport, len(all))
	var live []AuditWindow
	fetched := false
	for i, st := range all {
		out[i].Status = st
		if s := st.Success; s != nil {
			out[i].Producer, out[i].Loader, out[i].Shortfall = s.Producer, s.Loader, s.Shortfall
			out[i].Audited = s.Basis != BasisUnaudited
			continue
		}
		if audit == nil {
			continue
		}
		if !fetched {
			fetched = true
			if live, err = audit.Windows(ctx, topic, all[i].Start.Add(-AuditLookback), all[len(all)-1].End); err != nil {
				return nil, err
			}
		}
		for _, w := range live {
			if w.End.After(st.Start) && w.Start.Before(st.End) {
				out[i].Producer += w.Producer
				out[i].Loader += w.Loader
				out[i].Shortfall += max(0, w.Producer-w.Loader)
			}
		}
		out[i].Audited = true
	}
	return out, nil
}
