package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/hours"
)

// Demo defaults.
const (
	DefaultDemoDuration = 90 * time.Second
	DefaultDemoDrain    = 3 * time.Minute
)

// DemoOptions bound a demo run.
type DemoOptions struct {
	// Duration is how long the producers run; default DefaultDemoDuration.
	Duration time.Duration
	// Drain bounds the wait, after the producers stopped, for the mirror
	// and loader to catch up and the last windows to close; default
	// DefaultDemoDrain.
	Drain time.Duration
	// Progress, when set, is how often a progress line is printed.
	Progress time.Duration
	// During, when set, runs while the producers run (fault injection in
	// soaks); the demo waits for it before stopping the producers.
	During func(ctx context.Context, p *Pipeline) error
}

// Result is what a demo (or soak) proved.
type Result struct {
	Produced     int64 // P: records the producers' clusters acknowledged
	Mirrored     int64 // M: the mirror tier's count in the audit service
	Loaded       int64 // L: distinct records read back from the loaded files
	Files        int
	Duplicates   int64 // mirror re-sends the loader recognised and dropped; -1 unknown (scheduled loader)
	Windows      int   // W: closed windows of the topic
	Complete     int   // C: closed windows complete at every tier
	Latency50    time.Duration
	Latency99    time.Duration
	LatencyMax   time.Duration
	Producers    []ProducerStats
	Readback     *Readback
	AuditWindows []WindowReport
	// Readiness counts the partitions by state (with Config.CompactInterval).
	Readiness *Readiness

	// loaderReadback is the read-back before the final compaction, whose
	// Avro files carry the loader's latencies (nil without compaction).
	loaderReadback *Readback
}

// Summary is the demo's last line.
func (r *Result) Summary() string {
	return fmt.Sprintf("pipeline: %d produced, %d mirrored, %d loaded exactly once, audit complete in %d of %d closed windows",
		r.Produced, r.Mirrored, r.Loaded, r.Complete, r.Windows)
}

// Demo starts the pipeline, lets the producers run for the duration, stops
// them, waits until the mirror and the loader have caught up and the audit
// windows closed, then checks the loaded files against what was produced
// and prints the audit report, the files, a few records and the summary
// line to out. It returns an error wrapping ErrNotExactlyOnce or
// ErrAuditIncomplete when the proof fails.
func Demo(ctx context.Context, cfg Config, o DemoOptions, out io.Writer) (*Result, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultDemoDuration
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDemoDrain
	}
	p, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	p.PrintBanner(out)
	fmt.Fprintf(out, "\n== producing for %v\n", o.Duration)
	res, err := p.RunFor(ctx, o, out)
	if res != nil {
		res.Print(out, p)
	}
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return res, err
}

// RunFor produces for o.Duration (running o.During meanwhile), stops the
// producers, drains and verifies; see Demo.
func (p *Pipeline) RunFor(ctx context.Context, o DemoOptions, out io.Writer) (*Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	duringErr := make(chan error, 1)
	if o.During != nil {
		go func() {
			err := o.During(runCtx, p)
			if err != nil {
				cancel() // a failed fault ends the run now, not at its end
			}
			duringErr <- err
		}()
	} else {
		duringErr <- nil
	}
	p.progressUntil(runCtx, o.Progress, out)
	if err := <-duringErr; err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("during the run: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	produced := p.StopProducers()
	var total int64
	for _, ps := range produced {
		total += ps.Acked
	}
	fmt.Fprintf(out, "\n== producers stopped after %d page views; waiting for mirror, loader and audit windows to close\n", total)
	return p.Verify(ctx, o.Drain)
}

// progressUntil prints a progress line every interval until ctx ends.
func (p *Pipeline) progressUntil(ctx context.Context, every time.Duration, out io.Writer) {
	if every <= 0 {
		<-ctx.Done()
		return
	}
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var parts []string
			var total int64
			for _, ps := range p.ProducerStats() {
				parts = append(parts, fmt.Sprintf("%s %d", ps.Producer, ps.Acked))
				total += ps.Acked
			}
			fmt.Fprintf(out, "  %3.0fs  produced %d (%s)\n", time.Since(start).Seconds(), total, strings.Join(parts, ", "))
		}
	}
}

// Verify waits (up to drain) until every audit window of the topic is
// closed and complete, then reads the loaded files back and checks that
// every record the stopped producers acknowledged is there exactly once
// (again each second until the deadline, should the loader still be
// moving files into place). The files are read only once the audit says
// the loader has everything: reading millions of records back each second
// would slow what it waits for.
func (p *Pipeline) Verify(ctx context.Context, drain time.Duration) (*Result, error) {
	produced := p.ProducerStats()
	res := &Result{Producers: produced}
	for _, ps := range produced {
		res.Produced += ps.Acked
	}
	deadline := time.Now().Add(drain)
	for {
		last := time.Now().After(deadline) || ctx.Err() != nil
		err := p.checkAudit(ctx, res)
		if err == nil || last {
			rerr := p.readBack(ctx, res, produced)
			if err == nil {
				err = rerr
			} else if rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if err == nil && p.cfg.CompactInterval > 0 {
			res.Readiness, err = p.finalReadiness(ctx, time.Until(deadline)+2*time.Minute)
			if err == nil {
				// The files the final compaction left are what a user finds:
				// list them and prove exactly once on them too; the latency
				// stays the loader's (compacted records have none).
				loaded := res.Readback
				if err = p.readBack(ctx, res, produced); err == nil {
					res.loaderReadback = loaded
				}
			}
		}
		if err == nil {
			res.finish(p)
			return res, nil
		}
		if last {
			res.finish(p)
			return res, fmt.Errorf("after waiting %v: %w", drain, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// checkAudit fetches the audit report into res and says whether every
// window is closed and complete.
func (p *Pipeline) checkAudit(ctx context.Context, res *Result) error {
	windows, err := p.AuditReport(ctx)
	if err != nil {
		return err
	}
	res.AuditWindows = windows
	res.tally(windows)
	if res.Windows == 0 || res.Complete < res.Windows || !allClosed(windows) {
		return fmt.Errorf("%w: %d of %d closed windows complete, %d windows still open", ErrAuditIncomplete,
			res.Complete, res.Windows, len(windows)-res.Windows)
	}
	return nil
}

// readBack reads the loaded files into res and checks them against what
// was produced.
func (p *Pipeline) readBack(ctx context.Context, res *Result, produced []ProducerStats) error {
	p.filesMu.Lock()
	defer p.filesMu.Unlock()
	rb, err := ReadLoaded(ctx, p.fsys, p.base, p.cfg.Topic)
	if err != nil {
		return err
	}
	res.Readback = rb
	res.Loaded, err = rb.CheckExactlyOnce(produced)
	return err
}

func allClosed(ws []WindowReport) bool {
	for _, w := range ws {
		if !w.Closed {
			return false
		}
	}
	return true
}

// tally counts closed and complete windows and the mirror tier's total.
func (r *Result) tally(ws []WindowReport) {
	r.Windows, r.Complete, r.Mirrored = 0, 0, 0
	for _, w := range ws {
		r.Mirrored += w.Mirror
		if !w.Closed {
			continue
		}
		r.Windows++
		if w.Complete() {
			r.Complete++
		}
	}
}

func (r *Result) finish(p *Pipeline) {
	r.Duplicates = p.LoaderDuplicates()
	if r.Readback != nil {
		r.Files = len(r.Readback.Files)
		lat := r.Readback
		if r.loaderReadback != nil {
			lat = r.loaderReadback
		}
		r.Latency50 = lat.LatencyQuantile(0.5)
		r.Latency99 = lat.LatencyQuantile(0.99)
		r.LatencyMax = lat.LatencyQuantile(1)
	}
}

// Print writes the audit report, the loaded files, a few records and the
// summary line (last).
func (r *Result) Print(out io.Writer, p *Pipeline) {
	fmt.Fprintf(out, "\n== audit report (topic %s, window %v)\n", p.cfg.Topic, p.cfg.AuditWindow)
	fmt.Fprintf(out, "%-20s %9s %9s %9s %9s %9s  %s\n", "window (UTC)", "producer", "mirror", "loader", "mirror%", "loader%", "status")
	for _, w := range r.AuditWindows {
		status := "complete"
		switch {
		case !w.Closed:
			status = "open"
		case !w.Complete():
			status = "INCOMPLETE"
		}
		fmt.Fprintf(out, "%-20s %9d %9d %9d %8.3f%% %8.3f%%  %s\n", w.Start.UTC().Format("2006-01-02 15:04:05"),
			w.Producer, w.Mirror, w.Loader, pct(w.Mirror, w.Producer), pct(w.Loader, w.Producer), status)
	}
	if rb := r.Readback; rb != nil {
		fmt.Fprintf(out, "\n== loaded files (%s)\n", p.cfg.OutputURI())
		files := append([]LoadedFile(nil), rb.Files...)
		sort.Slice(files, func(i, j int) bool { return fileOrder(files[i].Path, files[j].Path) })
		const show = 12
		for i, f := range files {
			if i == show {
				fmt.Fprintf(out, "  ... and %d more files\n", len(files)-show)
				break
			}
			rel := strings.TrimPrefix(f.Path, p.base+"/")
			fmt.Fprintf(out, "  %-70s %6d records %8d bytes\n", rel, f.Records, f.Size)
		}
		fmt.Fprintf(out, "  %d files, %d records\n", len(files), rb.Records)
		fmt.Fprintf(out, "\n== a few records read back from %s\n", path.Base(p.base))
		for _, m := range rb.Sample {
			ref := "null"
			if u, ok := m["referrer"].(string); ok {
				ref = u
			}
			fmt.Fprintf(out, "  {datacenter: %v, producer: %v, seq: %v, user: %v, page: %v, referrer: %s, timestamp: %v}\n",
				m["datacenter"], m["producer"], m["seq"], m["user"], m["page"], ref,
				m["timestamp"].(time.Time).UTC().Format(time.RFC3339Nano))
		}
		dups := "mirrored duplicates dropped by the loader: see its job history"
		if r.Duplicates >= 0 {
			dups = fmt.Sprintf("%d mirrored duplicates dropped by the loader", r.Duplicates)
		}
		fmt.Fprintf(out, "\nproduce -> loaded file latency: p50 %v, p99 %v, max %v; %s\n",
			r.Latency50.Round(time.Millisecond), r.Latency99.Round(time.Millisecond), r.LatencyMax.Round(time.Millisecond), dups)
	}
	p.printRegistered(out)
	fmt.Fprintln(out, r.Summary())
	if r.Readiness != nil {
		fmt.Fprintln(out, r.Readiness)
	}
}

// fileOrder sorts loaded files by directory, then partition and first
// offset as numbers (package hours parses the names); compacted files,
// which carry neither, by name.
func fileOrder(a, b string) bool {
	da, db := path.Dir(a), path.Dir(b)
	if da != db {
		return da < db
	}
	fa, errA := hours.ParseLoaderFile(path.Base(a))
	fb, errB := hours.ParseLoaderFile(path.Base(b))
	switch {
	case errA == nil && errB == nil && fa.Partition != fb.Partition:
		return fa.Partition < fb.Partition
	case errA == nil && errB == nil && fa.First != fb.First:
		return fa.First < fb.First
	}
	return a < b
}

func pct(n, of int64) float64 {
	if of == 0 {
		if n == 0 {
			return 100
		}
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// errNoAudit: the audit service does not run (stopped for a fault).
var errNoAudit = errors.New("pipeline: the audit service is not running")
