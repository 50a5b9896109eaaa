package compact

import (
	"context"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// HourReport is one partition's state (hours.Status) with its audit
// counts: those its _SUCCESS recorded when it is ready, else the audit's
// current ones (none without an audit).
type HourReport struct {
	hours.Status
	Producer  int64 `json:"producer"`
	Loader    int64 `json:"loader"`
	Shortfall int64 `json:"shortfall"`
	// Audited says whether the counts come from the audit.
	Audited bool `json:"audited"`
}

// Report lists topic's partitions with their states and counts: what
// `tributary loader hours` prints and the audit service serves. closed
// and delay are as for Config (ClosedThrough's value, Delay); audit may be
// nil.
func Report(ctx context.Context, fsys filesys.FS, base, topic string, closed time.Time, delay time.Duration, audit Audit) ([]HourReport, error) {
	all, err := hours.Statuses(fsys, base, topic, closed, delay)
	if err != nil {
		return nil, err
	}
	out := make([]HourReport, len(all))
	var live []hours.AuditWindow
	fetched := false
	for i, st := range all {
		out[i].Status = st
		if s := st.Success; s != nil {
			out[i].Producer, out[i].Loader, out[i].Shortfall = s.Producer, s.Loader, s.Shortfall
			out[i].Audited = s.Basis != hours.BasisUnaudited
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
