package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
)

// CompactDelay is how long past a partition's end the pipeline's
// compaction waits for late records before judging its readiness.
const CompactDelay = 5 * time.Second

// Readiness counts the topic's partitions by state: what the demo's last
// line reports.
type Readiness struct {
	Partitions int // P: every partition of the topic in the output
	Ready      int // R: with _SUCCESS proved by the audit counts
	Compacted  int // C: compacted into Parquet
}

func (r Readiness) String() string {
	return fmt.Sprintf("readiness: %d of %d partitions ready (audit-proved), %d compacted", r.Ready, r.Partitions, r.Compacted)
}

// pipelineAudit is the running audit service's counts (hours.Audit),
// whichever service is running at the time.
type pipelineAudit struct{ p *Pipeline }

func (a pipelineAudit) Windows(ctx context.Context, topic string, from, to time.Time) ([]hours.AuditWindow, error) {
	a.p.mu.Lock()
	svc := a.p.svc
	a.p.mu.Unlock()
	if svc == nil {
		return nil, errNoAudit
	}
	return svc.LoaderWindows(ctx, topic, from, to)
}

func (p *Pipeline) compactor() (*compact.Compactor, error) {
	var catalog hours.Catalog
	if p.tables != nil {
		catalog = p.tables
	}
	return compact.New(compact.Config{FS: p.fsys, Base: p.base, Topics: []string{p.cfg.Topic}, Catalog: catalog,
		ClosedThrough: func(ctx context.Context) (time.Time, error) {
			return loader.CommittedThrough(ctx, p.fsys, p.base, LoaderJob)
		},
		Delay: CompactDelay, Audit: pipelineAudit{p}, TargetFileSize: 16 << 20,
		PauseAt: p.cfg.CompactPauseAt, PauseFile: p.cfg.CompactPauseFile,
		Logger: p.logger.With("part", "compact")})
}

// startCompact runs readiness and compaction (package compact) over the
// output every Config.CompactInterval.
func (p *Pipeline) startCompact(context.Context) (*part, error) {
	if p.cfg.CompactInterval <= 0 {
		return nil, nil
	}
	c, err := p.compactor()
	if err != nil {
		return nil, err
	}
	return p.runPart("compact", func(ctx context.Context) error {
		t := time.NewTicker(p.cfg.CompactInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				p.compactOnce(ctx, c)
			}
		}
	}), nil
}

// compactOnce runs one readiness and compaction pass; readers of the
// output (readBack) do not overlap it.
func (p *Pipeline) compactOnce(ctx context.Context, c *compact.Compactor) {
	p.filesMu.Lock()
	defer p.filesMu.Unlock()
	if sum, err := c.Run(ctx); err != nil && ctx.Err() == nil {
		p.logger.Warn("compaction pass failed", "part", "compact", "err", err, "summary", fmt.Sprintf("%+v", sum))
	}
}

// finalReadiness runs readiness and compaction passes until every
// partition of the topic is ready and compacted or wait runs out, and
// counts the states.
func (p *Pipeline) finalReadiness(ctx context.Context, wait time.Duration) (*Readiness, error) {
	c, err := p.compactor()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		p.compactOnce(ctx, c)
		sts, err := hours.Statuses(p.fsys, p.base, p.cfg.Topic, time.Time{}, 0)
		if err != nil {
			return nil, err
		}
		r := &Readiness{Partitions: len(sts)}
		for _, st := range sts {
			if st.Success != nil && st.Success.Basis == hours.BasisAudit {
				r.Ready++
			}
			if st.State == hours.StateCompacted {
				r.Compacted++
			}
		}
		if (r.Ready == r.Partitions && r.Compacted == r.Partitions) || !time.Now().Before(deadline) || ctx.Err() != nil {
			return r, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
