package pipeline

import (
	"fmt"
	"io"
	"time"
)

// PrintSoakTable writes a soak's summary table.
func PrintSoakTable(out io.Writer, r *Result, faults *FaultLog, duration time.Duration) {
	var failed int64
	for _, ps := range r.Producers {
		failed += ps.Failed
	}
	row := func(k string, v any) { fmt.Fprintf(out, "  %-52s %v\n", k, v) }
	fmt.Fprintf(out, "\n== soak summary\n")
	row("producing for", duration)
	row("records produced (acknowledged)", r.Produced)
	row("records whose send failed (allowed at most once)", failed)
	row("records loaded, read back from the files", r.Loaded)
	row("files", r.Files)
	row("faults injected", faults.Count())
	for _, f := range dedupe(faults.Injected) {
		row("  "+f.name, fmt.Sprintf("x%d", f.n))
	}
	row("mirror tier count above production (re-sent)", r.Mirrored-r.Produced)
	row("duplicates dropped by the loader (origin header)", r.Duplicates)
	row("closed audit windows complete", fmt.Sprintf("%d of %d", r.Complete, r.Windows))
	row("produce -> loaded file latency p50", r.Latency50.Round(time.Millisecond))
	row("produce -> loaded file latency p99", r.Latency99.Round(time.Millisecond))
	row("produce -> loaded file latency max", r.LatencyMax.Round(time.Millisecond))
}

type named struct {
	name string
	n    int
}

func dedupe(s []string) []named {
	var out []named
	idx := map[string]int{}
	for _, v := range s {
		if i, ok := idx[v]; ok {
			out[i].n++
			continue
		}
		idx[v] = len(out)
		out = append(out, named{v, 1})
	}
	return out
}
