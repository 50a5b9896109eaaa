package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
)

// LoadedFile is one data file of the loader's output.
type LoadedFile struct {
	Path    string // in the FS
	Size    int64
	ModTime time.Time
	Records int64
}

// Readback is what the loaded files of one topic hold, read back record by
// record (never from counters).
type Readback struct {
	Files   []LoadedFile
	Records int64 // page views read, duplicates included
	// Sample holds the first records read, as plain values (package rows).
	Sample []map[string]any
	// Latencies are, per record, its file's modification time (the file is
	// closed just before the loader commits it) minus the record's event
	// time: an end-to-end produce-to-loaded latency, bounded below by the
	// commit step's own duration. Records read from compacted (Parquet)
	// files, written later, are left out.
	Latencies []time.Duration

	seen map[string]*seqSet // producer -> seqs seen
}

// seqSet records which seqs of one producer were read, and how often.
type seqSet struct {
	once  []uint64 // bit per seq: read at least once
	dups  []int64  // seqs read more than once (each extra read listed)
	count int64
}

func (s *seqSet) add(seq int64) {
	w := int(seq / 64)
	for len(s.once) <= w {
		s.once = append(s.once, 0)
	}
	bit := uint64(1) << (seq % 64)
	if s.once[w]&bit != 0 {
		s.dups = append(s.dups, seq)
	}
	s.once[w] |= bit
	s.count++
}

func (s *seqSet) has(seq int64) bool {
	w := int(seq / 64)
	return w < len(s.once) && s.once[w]&(uint64(1)<<(seq%64)) != 0
}

// sampleSize is how many decoded records a Readback keeps.
const sampleSize = 5

// ReadLoaded reads every data file of topic under base, as package hours
// lists them (Avro files and compacted Parquet hours alike, by the reader
// rule). Every record must be a page view (PageViewSchema).
func ReadLoaded(ctx context.Context, fsys filesys.FS, base, topic string) (*Readback, error) {
	rb := &Readback{seen: map[string]*seqSet{}}
	files, err := hours.TopicData(fsys, base, topic)
	if err != nil {
		return rb, err
	}
	for _, d := range files {
		if err := ctx.Err(); err != nil {
			return rb, err
		}
		if err := rb.readFile(fsys, d); err != nil {
			return rb, err
		}
	}
	return rb, nil
}

func (rb *Readback) readFile(fsys filesys.FS, d hours.Data) error {
	lf := LoadedFile{Path: d.Path(), Size: d.Size, ModTime: d.ModTime}
	_, err := rows.Read(fsys, d, func(m map[string]any) error {
		producer, _ := m["producer"].(string)
		seq, ok := m["seq"].(int64)
		ts, ok2 := m["timestamp"].(time.Time)
		if producer == "" || !ok || !ok2 || seq < 0 {
			return fmt.Errorf("%s: record %d is not a page view: %v", lf.Path, lf.Records, m)
		}
		s := rb.seen[producer]
		if s == nil {
			s = &seqSet{}
			rb.seen[producer] = s
		}
		s.add(seq)
		lf.Records++
		rb.Records++
		if d.Format == hours.Avro {
			rb.Latencies = append(rb.Latencies, lf.ModTime.Sub(ts))
		}
		if len(rb.Sample) < sampleSize {
			rb.Sample = append(rb.Sample, m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rb.Files = append(rb.Files, lf)
	return nil
}

// Producers returns the producer ids read, sorted.
func (rb *Readback) Producers() []string {
	out := make([]string, 0, len(rb.seen))
	for p := range rb.seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Duplicates returns how many records were read more than once.
func (rb *Readback) Duplicates() int64 {
	var n int64
	for _, s := range rb.seen {
		n += int64(len(s.dups))
	}
	return n
}

// CheckExactlyOnce compares the records read with what the producers
// sent: every acknowledged record (seq 0..Sent-1 except failed ones) must
// be read exactly once, a failed one at most once (a send that timed out
// may still have been written), and nothing else may be there. It returns
// the number of distinct records read, and an error wrapping
// ErrNotExactlyOnce that lists the first problems.
func (rb *Readback) CheckExactlyOnce(produced []ProducerStats) (int64, error) {
	var problems []string
	var distinct int64
	known := map[string]bool{}
	for _, ps := range produced {
		known[ps.Producer] = true
		s := rb.seen[ps.Producer]
		if s == nil {
			s = &seqSet{}
		}
		failed := map[int64]bool{}
		for _, f := range ps.FailedSeqs {
			failed[f] = true
		}
		var missing []int64
		var nMissing int64
		for seq := range ps.Sent {
			if s.has(seq) {
				distinct++
			} else if !failed[seq] {
				nMissing++
				if len(missing) < 5 {
					missing = append(missing, seq)
				}
			}
		}
		if nMissing > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d records missing (first seqs %v)", ps.Producer, nMissing, missing))
		}
		if len(s.dups) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d records loaded more than once (first seqs %v)", ps.Producer, len(s.dups), s.dups[:min(5, len(s.dups))]))
		}
		for w := int(ps.Sent / 64); w < len(s.once); w++ {
			for b := range 64 {
				if seq := int64(w*64 + b); seq >= ps.Sent && s.once[w]&(uint64(1)<<b) != 0 {
					problems = append(problems, fmt.Sprintf("%s: seq %d loaded but never sent", ps.Producer, seq))
					break
				}
			}
		}
	}
	for _, p := range rb.Producers() {
		if !known[p] {
			problems = append(problems, fmt.Sprintf("%d records of unknown producer %s", rb.seen[p].count, p))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return distinct, fmt.Errorf("%w: %s", ErrNotExactlyOnce, strings.Join(problems, "; "))
	}
	return distinct, nil
}

// LatencyQuantile returns the q-quantile (0..1) of the latencies, 0 if none.
func (rb *Readback) LatencyQuantile(q float64) time.Duration {
	if len(rb.Latencies) == 0 {
		return 0
	}
	s := slices.Clone(rb.Latencies)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}
