package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/audit/service"
	"github.com/tributary/tributary/internal/network"
)

// WindowReport is one audit window of the page-view topic as the audit
// service reports it: what each tier counted of the records whose
// timestamps fall in it.
type WindowReport struct {
	Start  time.Time
	Window time.Duration
	// Closed: no tier reported on the window for the service's grace
	// after its end.
	Closed bool
	// Status is the service's: open, complete or incomplete.
	Status                   string
	Producer, Mirror, Loader int64
}

// Complete reports whether the service found the window complete and the
// loader counted exactly what the producers did (the service calls a
// surplus complete, since it is never a loss; the loader removes mirror
// duplicates, so a surplus there would be a duplicate in the files).
func (w WindowReport) Complete() bool {
	return w.Closed && w.Status == service.StatusComplete && w.Producer > 0 &&
		w.Mirror >= w.Producer && w.Loader == w.Producer
}

// startAudit runs the audit service in this process. It consumes the
// audit topic of every cluster: the producers' counts arrive from their
// datacenter directly and again through the mirror, and the service
// counts each event once. Its store is under <Dir>/audit, so a restart
// resumes where it stopped; it keeps the port it got first.
func (p *Pipeline) startAudit(ctx context.Context) (*part, error) {
	var clusters []service.Cluster
	for _, name := range p.cfg.clusters() {
		cc, err := p.clientConfig(name, "audit")
		if err != nil {
			return nil, err
		}
		clusters = append(clusters, service.Cluster{Name: name, Brokers: cc.Brokers, Security: cc.Security()})
	}
	var httpSec *network.HTTPSecurity
	if p.secure != nil {
		httpSec = p.secure.dashboard
	}
	listen := p.cfg.DashboardAddr
	p.mu.Lock()
	if p.dashboard != "" {
		listen = p.dashboard
	}
	p.mu.Unlock()
	svc, err := service.New(service.Config{
		Clusters:         clusters,
		Dir:              filepath.Join(p.dir, "audit"),
		Listen:           listen,
		Security:         httpSec,
		PartitionRefresh: 2 * time.Second,
		Logger:           p.logger.With("part", "audit"),
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.dashboard = svc.Addr()
	p.svc = svc
	p.mu.Unlock()
	pt := p.runPart("audit", func(ctx context.Context) error {
		err := svc.Run(ctx)
		p.mu.Lock()
		if p.svc == svc {
			p.svc = nil
		}
		p.mu.Unlock()
		return err
	})
	pt.info = httpSec.Scheme() + "://" + svc.Addr() + "/"
	return pt, nil
}

// AuditReport returns the audit service's windows of the page-view topic,
// oldest first.
func (p *Pipeline) AuditReport(ctx context.Context) ([]WindowReport, error) {
	p.mu.Lock()
	svc := p.svc
	p.mu.Unlock()
	if svc == nil {
		return nil, errNoAudit
	}
	ws, err := svc.Windows(p.cfg.Topic, time.Time{}, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("audit service: %w", err)
	}
	out := make([]WindowReport, 0, len(ws))
	for _, w := range ws {
		// Counts of other window lengths are other producers' (an
		// example run with the default window, say).
		if w.WindowMs != p.cfg.AuditWindow.Milliseconds() {
			continue
		}
		out = append(out, WindowReport{
			Start: w.WindowStart, Window: time.Duration(w.WindowMs) * time.Millisecond,
			Closed: w.Closed, Status: w.Status,
			Producer: w.Producer, Mirror: w.Counts[audit.TierMirror], Loader: w.Counts[audit.TierLoader],
		})
	}
	return out, nil
}
