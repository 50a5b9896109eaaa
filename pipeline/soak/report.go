package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// Result is a soak's outcome.
type Result struct {
	Producing time.Duration // how long the producers ran

	Produced int64 // acknowledged page views
	Failed   int64 // sends that failed (allowed in the files at most once)
	// Mirrored is how many acknowledged records the analytics cluster
	// holds (at least once); MirrorRecords all its records, duplicates
	// included; MirrorDuplicates the extra copies the mirrors wrote.
	Mirrored, MirrorRecords, MirrorDuplicates int64
	// Loaded is how many acknowledged records the files hold exactly
	// once, read with fastavro; LoadedTwice the extra copies; LoadedRecords
	// every record read.
	Loaded, LoadedTwice, LoadedRecords int64
	Files                              int

	Windows, Complete, OpenWindows int // closed audit windows, complete ones, still open
	// MirrorUndercounted counts the closed windows incomplete only because
	// the mirror tier's count is short while the records are all there
	// (Problems names them, starting with MirrorUndercount).
	MirrorUndercounted int

	Latency50, Latency99, LatencyMax time.Duration

	Faults    int
	Kills     int
	FaultKind map[string]int
	Processes []ProcessUse

	// Problems lists everything that went wrong, each naming its window,
	// topic, file or record.
	Problems []string
}

// ProcessUse is one process's resources over the run, from /proc.
type ProcessUse struct {
	Name              string
	Restarts          int // unplanned, by the supervisor
	Kills             int // by faults
	FirstRSS, LastRSS int64
	MaxRSSKiB         int64
	FirstFDs, LastFDs int
	MaxFDs            int
	Samples           int
	SinceStart        time.Duration // the sampled incarnation's span first..last
}

// MirrorUndercount starts the problem naming a window whose only fault is
// a mirror tier count lost with a SIGKILLed mirror.
const MirrorUndercount = "audit: mirror tier under-counted in"

// OK reports whether the soak proved the pipeline: every acknowledged
// record mirrored and loaded exactly once, every closed window complete.
func (r *Result) OK() bool {
	return r.Produced > 0 && r.Produced == r.Mirrored && r.Mirrored == r.Loaded && r.LoadedTwice == 0 &&
		r.Windows > 0 && r.Complete == r.Windows && len(r.Problems) == 0
}

// Line is the soak's last line.
func (r *Result) Line() string {
	return fmt.Sprintf("soak: %d produced, %d mirrored, %d loaded exactly once, %d faults (%d kill -9), audit complete in %d of %d closed windows",
		r.Produced, r.Mirrored, r.Loaded, r.Faults, r.Kills, r.Complete, r.Windows)
}

func (r *Result) fill(s *Soak) {
	s.mu.Lock()
	faults := append([]injected(nil), s.faults...)
	s.mu.Unlock()
	_, r.FaultKind, r.Kills = kindCounts(faults)
	r.Faults = len(faults)
	for _, f := range faults {
		if f.err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("fault %s at %.0fs (%s) failed: %v", f.kind, f.at.Seconds(), f.what, f.err))
		}
	}
	use := func(p *proc) {
		u := ProcessUse{Name: p.name, Restarts: p.restarts, Kills: p.kills, Samples: len(p.samples)}
		if len(p.samples) == 0 {
			r.Processes = append(r.Processes, u)
			return
		}
		last := p.samples[len(p.samples)-1]
		first := last
		for _, sm := range p.samples {
			u.MaxRSSKiB = max(u.MaxRSSKiB, sm.rssKiB)
			u.MaxFDs = max(u.MaxFDs, sm.fds)
			if sm.pid == last.pid && first.pid == last.pid && sm.at.Before(first.at) {
				first = sm
			}
		}
		u.FirstRSS, u.LastRSS, u.FirstFDs, u.LastFDs = first.rssKiB, last.rssKiB, first.fds, last.fds
		u.SinceStart = last.at.Sub(first.at)
		r.Processes = append(r.Processes, u)
	}
	for _, p := range s.procs {
		p.mu.Lock()
		use(p)
		p.mu.Unlock()
	}
	for _, j := range s.jvms() {
		use(&j.proc)
	}
}

// Print writes the summary table, the problems and the final line.
func (r *Result) Print(out io.Writer) {
	row := func(k string, v any) { fmt.Fprintf(out, "  %-52s %v\n", k, v) }
	fmt.Fprintf(out, "\n== soak summary\n")
	row("producing for", r.Producing.Round(time.Second))
	row("faults injected", fmt.Sprintf("%d (%d kill -9)", r.Faults, r.Kills))
	for _, k := range sortedKeys(r.FaultKind) {
		row("  "+k, fmt.Sprintf("x%d", r.FaultKind[k]))
	}
	row("records produced (acknowledged, acks=all)", r.Produced)
	row("records whose send failed (allowed at most once)", r.Failed)
	row("acknowledged records in analytics (mirrored)", r.Mirrored)
	row("records in analytics, duplicates included", r.MirrorRecords)
	row("duplicates at the mirror tier (re-sent after faults)", r.MirrorDuplicates)
	row("records in the files (read with fastavro)", r.LoadedRecords)
	row("acknowledged records loaded exactly once", r.Loaded)
	row("records loaded twice", r.LoadedTwice)
	row("duplicates removed by the loader", r.MirrorDuplicates-r.LoadedTwice)
	row("files", r.Files)
	row("closed audit windows complete (every tier)", fmt.Sprintf("%d of %d (%d still open)", r.Complete, r.Windows, r.OpenWindows))
	row("  incomplete only by the mirror tier's lost counts", r.MirrorUndercounted)
	row("produce -> file latency p50", r.Latency50.Round(time.Millisecond))
	row("produce -> file latency p99", r.Latency99.Round(time.Millisecond))
	row("produce -> file latency max", r.LatencyMax.Round(time.Millisecond))
	fmt.Fprintf(out, "\n  %-30s %8s %6s %22s %11s %12s %8s\n", "process", "restarts", "kills", "RSS MiB first/last/max", "fds f/l/max", "over", "samples")
	for _, p := range r.Processes {
		fmt.Fprintf(out, "  %-30s %8d %6d %22s %11s %12v %8d\n", p.Name, p.Restarts, p.Kills,
			fmt.Sprintf("%.0f/%.0f/%.0f", mib(p.FirstRSS), mib(p.LastRSS), mib(p.MaxRSSKiB)),
			fmt.Sprintf("%d/%d/%d", p.FirstFDs, p.LastFDs, p.MaxFDs), p.SinceStart.Round(time.Second), p.Samples)
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(out, "\n== problems\n")
		for i, p := range r.Problems {
			if i == 50 {
				fmt.Fprintf(out, "  ... and %d more\n", len(r.Problems)-i)
				break
			}
			fmt.Fprintf(out, "  %s\n", p)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, r.Line())
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
