package compact

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// fakeAudit serves fixed audit windows (the readiness rule's input).
type fakeAudit struct{ windows []hours.AuditWindow }

func (a fakeAudit) Windows(_ context.Context, _ string, from, to time.Time) ([]hours.AuditWindow, error) {
	var out []hours.AuditWindow
	for _, w := range a.windows {
		if !w.Start.Before(from) && w.Start.Before(to) {
			out = append(out, w)
		}
	}
	return out, nil
}

// memCatalog is an in-memory Catalog that records every sync.
type memCatalog struct {
	mu    sync.Mutex
	parts map[string][]hours.Partition
	syncs int
}

func (c *memCatalog) Sync(_ context.Context, topic string, want []hours.Partition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts == nil {
		c.parts = map[string][]hours.Partition{}
	}
	c.parts[topic] = append([]hours.Partition(nil), want...)
	c.syncs++
	return nil
}

// windows10 splits an hour's counts into six 10-minute audit windows, the
// loader missing `missing` records of the first.
func windows10(start time.Time, perWindow, missing int64) []hours.AuditWindow {
	var out []hours.AuditWindow
	for i := 0; i < 6; i++ {
		w := hours.AuditWindow{Start: start.Add(time.Duration(i) * 10 * time.Minute), Producer: perWindow, Loader: perWindow}
		w.End = w.Start.Add(10 * time.Minute)
		if i == 0 {
			w.Loader -= missing
		}
		out = append(out, w)
	}
	return out
}

// TestReadinessShortfall: an hour whose loader count is 17 short of the
// producers' never becomes ready at threshold 1.0, is published
// ready-incomplete with a shortfall of 17 at completeness.timeout, and is
// ready at 0.999 when the hour is large; compaction waits for readiness.
func TestReadinessShortfall(t *testing.T) {
	ctx := context.Background()
	closed := func(context.Context) (time.Time, error) { return hour0.Add(2 * time.Hour), nil }
	for _, tc := range []struct {
		name      string
		perWindow int64
		threshold float64
		now       time.Time
		state     string
		basis     string
	}{
		{"threshold 1.0 before the timeout", 1000, 1.0, hour0.Add(3 * time.Hour), "", ""},
		{"threshold 1.0 at the timeout", 1000, 1.0, hour0.Add(7 * time.Hour), hours.StateReadyIncomplete, hours.BasisTimeout},
		{"threshold 0.999, large hour", 20000, 0.999, hour0.Add(3 * time.Hour), hours.StateReady, hours.BasisAudit},
		{"threshold 0.999, small hour", 1000, 0.999, hour0.Add(3 * time.Hour), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, base := filesys.Local(), t.TempDir()
			dirs := writeHours(t, fsys, base, "pv", hour0, 1, 2, 10)
			cat := &memCatalog{}
			c, err := New(Config{FS: fsys, Base: base, ClosedThrough: closed, Delay: time.Minute,
				Audit: fakeAudit{windows10(hour0, tc.perWindow, 17)}, Threshold: tc.threshold, Timeout: 6 * time.Hour,
				Catalog: cat, Now: func() time.Time { return tc.now }})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := c.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s, err := hours.ReadSuccess(fsys, dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			st, err := hours.StatusOf(fsys, hours.Hour{Topic: "pv", Start: hour0, Dir: dirs[0]}, hour0.Add(2*time.Hour), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if tc.state == "" {
				if s != nil || sum.HoursCompacted != 0 || st.State != hours.StateWaiting || len(cat.parts["pv"]) != 0 {
					t.Fatalf("not proved complete: _SUCCESS %+v, summary %+v, state %s, catalog %v: want waiting-for-audit, uncompacted, unpublished",
						s, sum, st.State, cat.parts)
				}
				return
			}
			if s == nil || s.State != tc.state || s.Basis != tc.basis || s.Shortfall != 17 ||
				s.Producer != 6*tc.perWindow || s.Loader != 6*tc.perWindow-17 || len(s.Windows) != 6 {
				t.Fatalf("_SUCCESS %+v: want %s (%s) with a shortfall of 17", s, tc.state, tc.basis)
			}
			if sum.HoursCompacted != 1 || st.State != hours.StateCompacted {
				t.Fatalf("summary %+v, state %s: want the ready hour compacted", sum, st.State)
			}
			want := []hours.Partition{{Topic: "pv", Start: hour0, Duration: time.Hour, Location: hours.GenerationDir(hours.Hour{Dir: dirs[0]}, 1), Format: "parquet", SchemaID: 7}}
			if got := cat.parts["pv"]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("catalog %+v, want %+v", got, want)
			}
			if s2, err := hours.ReadSuccess(fsys, want[0].Location); err != nil || s2 == nil || s2.Shortfall != 17 {
				t.Fatalf("the generation directory's _SUCCESS: %+v, %v", s2, err)
			}
		})
	}
}

// TestRecompactionMergesLateFiles: Avro files landing in a compacted hour
// are merged with the previous generation into a new one, which the
// catalog then points at; the older generation and the late files go; the
// rows read with pyarrow are the Avro rows of all of them.
func TestRecompactionMergesLateFiles(t *testing.T) {
	recompaction(t, filesys.Local(), t.TempDir())
}

func TestRecompactionMergesLateFilesHDFS(t *testing.T) {
	fsys, base := openHDFS(t)
	recompaction(t, fsys, base)
}

func recompaction(t *testing.T, fsys filesys.FS, base string) {
	ctx := context.Background()
	local := t.TempDir()
	dirs := writeHours(t, fsys, base, "pv", hour0, 1, 2, 30)
	names, _ := hours.DataFiles(fsys, dirs[0])
	avro := copyOut(t, fsys, dirs[0], names, filepath.Join(local, "orig"))
	// Two late batches, written as the loader would (other offsets).
	late := path.Join(base, "late")
	lateDirs := writeHours(t, fsys, late, "pv", hour0, 1, 2, 7)
	cat := &memCatalog{}
	c, err := New(Config{FS: fsys, Base: base, Delay: time.Minute, Catalog: cat, TargetFileSize: 1 << 20,
		ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(2 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	h := hours.Hour{Topic: "pv", Start: hour0, Dir: dirs[0]}
	checks := map[string]check{}
	for gen := 1; gen <= 3; gen++ {
		if gen > 1 {
			// The next late file of the batch, renamed to offsets of its own.
			next := mustNames(t, fsys, lateDirs[0])[0]
			lf, _ := hours.ParseLoaderFile(next)
			lf.First, lf.Last = lf.First+int64(50000*gen), lf.Last+int64(50000*gen)
			if err := fsys.Rename(path.Join(lateDirs[0], next), path.Join(dirs[0], lf.Name())); err != nil {
				t.Fatal(err)
			}
			avro = append(avro, copyOut(t, fsys, dirs[0], []string{lf.Name()}, filepath.Join(local, fmt.Sprint("late", gen)))...)
			if d, _ := hours.DataFiles(fsys, dirs[0]); len(d) < 2 || !strings.HasSuffix(d[len(d)-1], ".avro") {
				t.Fatalf("before recompaction readers see %v: want the Parquet and the late Avro file", d)
			}
		}
		sum, err := c.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if gen > 1 && (sum.HoursRecompacted != 1 || sum.LateFiles != 1) {
			t.Fatalf("generation %d: summary %+v: want one hour recompacted from one late file", gen, sum)
		}
		loc := hours.GenerationDir(h, gen)
		got := cat.parts["pv"]
		if len(got) != 1 || got[0].Location != loc || got[0].Format != "parquet" {
			t.Fatalf("generation %d: catalog %+v, want the partition at %s", gen, got, loc)
		}
		if gs, _ := hours.Generations(fsys, h); fmt.Sprint(gs) != fmt.Sprint([]int{gen}) {
			t.Fatalf("generation %d: generation directories %v", gen, gs)
		}
		data, err := hours.HourData(fsys, h)
		if err != nil {
			t.Fatal(err)
		}
		var pq []string
		for _, d := range data {
			if d.Dir != loc || d.Format != hours.Parquet {
				t.Fatalf("generation %d: data file %s: want only Parquet in %s", gen, d.Path(), loc)
			}
			pq = append(pq, copyOut(t, fsys, d.Dir, []string{d.Name}, filepath.Join(local, fmt.Sprint("gen", gen)))...)
		}
		list, _ := fsys.ReadDir(dirs[0])
		for _, fi := range list {
			if hours.IsData(fi.Name()) {
				t.Fatalf("generation %d: the hour directory still holds %s", gen, fi.Name())
			}
		}
		checks[fmt.Sprint("generation", gen)] = check{Avro: avro, Parquet: pq}
	}
	comparePython(t, checks)
}

func mustNames(t *testing.T, fsys filesys.FS, dir string) []string {
	t.Helper()
	n, err := hours.DataFiles(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
