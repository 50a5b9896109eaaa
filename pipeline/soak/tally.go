package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tributary/tributary/pipeline"
)

// tally counts how often each (producer, seq) was seen at one tier.
type tally struct {
	seen  map[string][]uint8 // producer -> count per seq (saturating)
	total int64
	// unknown counts records of producers no load generator reported.
	bad []string // records that are not what their producer sent
}

func newTally() *tally { return &tally{seen: map[string][]uint8{}} }

func (t *tally) add(producer string, seq int64) {
	s := t.seen[producer]
	for int64(len(s)) <= seq {
		s = append(s, make([]uint8, max(1024, len(s)))...)
	}
	if s[seq] < 255 {
		s[seq]++
	}
	t.seen[producer] = s
	t.total++
}

func (t *tally) count(producer string, seq int64) uint8 {
	s := t.seen[producer]
	if seq < int64(len(s)) {
		return s[seq]
	}
	return 0
}

func (t *tally) badf(format string, args ...any) {
	if len(t.bad) < 10 {
		t.bad = append(t.bad, fmt.Sprintf(format, args...))
	}
}

// comparison is one tier's records against the acknowledged ones.
type comparison struct {
	acked     int64 // acknowledged records
	once      int64 // acknowledged records seen exactly once
	present   int64 // acknowledged records seen at least once
	twice     int64 // records seen more than once (extra copies)
	missing   int64 // acknowledged records not seen
	failedIn  int64 // records whose send failed, seen (allowed once)
	neverSent int64 // seqs never handed to a producer, or unknown producers
	problems  []string
}

// compare checks t against the producers' final reports; copies are a
// problem unless dupsOK (the mirror tier is at-least-once).
func (t *tally) compare(reports []pipeline.ProducerStats, dupsOK bool) comparison {
	var c comparison
	known := map[string]bool{}
	for _, ps := range reports {
		known[ps.Producer] = true
		failed := map[int64]bool{}
		for _, f := range ps.FailedSeqs {
			failed[f] = true
		}
		var missing, twice []int64
		for seq := range ps.Sent {
			n := t.count(ps.Producer, seq)
			if n > 1 {
				c.twice += int64(n - 1)
				if len(twice) < 5 {
					twice = append(twice, seq)
				}
			}
			switch {
			case failed[seq]:
				if n > 0 {
					c.failedIn++
				}
			case n == 0:
				c.acked++
				c.missing++
				if len(missing) < 5 {
					missing = append(missing, seq)
				}
			default:
				c.acked++
				c.present++
				if n == 1 {
					c.once++
				}
			}
		}
		if len(missing) > 0 {
			c.problems = append(c.problems, fmt.Sprintf("%s: acknowledged records missing (first seqs %v)", ps.Producer, missing))
		}
		if len(twice) > 0 && !dupsOK {
			c.problems = append(c.problems, fmt.Sprintf("%s: records seen more than once (first seqs %v)", ps.Producer, twice))
		}
		s := t.seen[ps.Producer]
		for seq := ps.Sent; seq < int64(len(s)); seq++ {
			if s[seq] > 0 {
				c.neverSent += int64(s[seq])
			}
		}
	}
	var unknown []string
	for p, s := range t.seen {
		if known[p] {
			continue
		}
		unknown = append(unknown, p)
		for _, n := range s {
			c.neverSent += int64(n)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		c.problems = append(c.problems, "records of unknown producers "+strings.Join(unknown, ", "))
	}
	if c.neverSent > 0 {
		c.problems = append(c.problems, fmt.Sprintf("%d records never sent by a producer", c.neverSent))
	}
	c.problems = append(c.problems, t.bad...)
	slices.Sort(c.problems)
	return c
}
