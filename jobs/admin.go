package jobs

import (
	"context"
	"fmt"
	"time"
)

// Listing is one line of `tributary jobs list`.
type Listing struct {
	Spec
	// Paused is true when the config or `jobs pause` paused the job.
	Paused bool       `json:"paused"`
	Last   *Run       `json:"last_run,omitempty"`
	Next   *time.Time `json:"next_run,omitempty"`
}

// List returns every published job with its last run and, unless paused,
// its next due time after now.
func (s *Store) List(ctx context.Context, now time.Time) ([]Listing, error) {
	specs, err := s.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Listing
	for _, spec := range specs {
		l := Listing{Spec: spec, Paused: spec.Paused}
		if p, err := s.Paused(ctx, spec.Name); err != nil {
			return nil, err
		} else if p {
			l.Paused = true
		}
		runs, err := s.History(ctx, spec.Name, 1)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			l.Last = &runs[len(runs)-1]
		}
		if sched, err := ParseSchedule(spec.Schedule); err == nil && !l.Paused {
			j := Job{Spec: spec, schedule: sched}
			n := j.Next(now)
			l.Next = &n
		}
		out = append(out, l)
	}
	return out, nil
}

// WaitRequest waits up to wait for the run made for request to end.
func (s *Store) WaitRequest(ctx context.Context, job, request string, wait time.Duration) (*Run, error) {
	deadline := time.Now().Add(wait)
	for {
		r, err := s.FindRequest(ctx, job, request)
		if err != nil {
			return nil, err
		}
		if r != nil && r.Status != StatusRunning {
			return r, nil
		}
		if time.Now().After(deadline) {
			if r == nil {
				return nil, fmt.Errorf("%w: no scheduler took request %s of %s within %v (is `tributary jobs serve` running with this job?)", ErrNotFinished, request, job, wait)
			}
			return r, fmt.Errorf("%w: run %s of %s still running after %v", ErrNotFinished, r.ID, job, wait)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
