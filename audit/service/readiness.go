package service

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// Readiness points the service at a loader's output, for GET
// /api/topics/{topic}/partitions: each partition's state (package hours:
// loading, waiting-for-audit, ready, ready-incomplete, compacted) with the
// counts of its _SUCCESS or, before it is ready, this service's.
type Readiness struct {
	FS   filesys.FS
	Base string
	// ClosedThrough is how far the loader job has committed
	// (loader.CommittedThrough); Delay the compact job's wait past a
	// partition's end.
	ClosedThrough func(ctx context.Context) (time.Time, error)
	Delay         time.Duration
}

// loaderWindows turns window reports into the readiness rule's input.
func loaderWindows(reps []WindowReport) []hours.AuditWindow {
	out := make([]hours.AuditWindow, len(reps))
	for i, r := range reps {
		out[i] = hours.AuditWindow{Start: r.WindowStart, End: r.WindowEnd, Producer: r.Producer, Loader: r.Counts[audit.TierLoader]}
	}
	return out
}

// LoaderWindows is Windows as the readiness rule takes it (hours.Audit's
// shape): each window's producer and loader tier totals.
func (s *Service) LoaderWindows(_ context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	reps, err := s.Windows(topic, from, to)
	if err != nil {
		return nil, err
	}
	return loaderWindows(reps), nil
}

// storeAudit is the service's own counts as hours.Audit.
type storeAudit struct{ s *Service }

func (a storeAudit) Windows(ctx context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	return a.s.LoaderWindows(ctx, topic, from, to)
}

// Partitions reports topic's partitions in the loader output (Config.Readiness).
func (s *Service) Partitions(ctx context.Context, topic string) ([]hours.HourReport, error) {
	r := s.cfg.Readiness
	if r == nil {
		return nil, fmt.Errorf("%w: partitions: the service was started without the loader's output (--loader-output)", ErrNotFound)
	}
	closed, err := r.ClosedThrough(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := hours.Report(ctx, r.FS, r.Base, topic, closed, r.Delay, storeAudit{s})
	if err != nil {
		return nil, err
	}
	if rep == nil {
		rep = []hours.HourReport{}
	}
	return rep, nil
}

func (s *Service) handlePartitions(w http.ResponseWriter, r *http.Request) {
	rep, err := s.Partitions(r.Context(), r.PathValue("topic"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, rep)
}
