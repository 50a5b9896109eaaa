package loader_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
)

// TestReadinessAfterLoaderCrash SIGKILLs the loader at every step of its
// commit protocol, runs readiness and compaction (with a catalog) on what
// the crash left, then recovers the loader and runs them again: at both
// points every ready hour holds exactly its produced records (read back by
// the reader rule, Avro or Parquet), and the catalog holds exactly the
// ready hours at locations that exist, in one format.
func TestReadinessAfterLoaderCrash(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "crashready", n: 2000, partitions: 2, start: hourStart(), span: 2 * time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	want := map[time.Time]map[int64]bool{}
	for i := 0; i < d.n; i++ {
		h := d.ts(i).Truncate(time.Hour)
		if want[h] == nil {
			want[h] = map[int64]bool{}
		}
		want[h][int64(i)] = true
	}
	fc := fileSystems[0]
	for step := 1; step <= loader.NumSteps; step++ {
		t.Run(fmt.Sprintf("step%d", step), func(t *testing.T) {
			fsys, base, uri := fc.open(t)
			job := fmt.Sprintf("crashready-%d", step)
			cfg := fc.config(t, c, job, d.topic, uri)
			cfg.CommitRecords = 600
			cfg.Codec = "deflate"
			ch := startChild(t, cfg, fmt.Sprintf("%s=%d:2", loader.CrashEnv, step))
			if err := ch.wait(t); !killedBySIGKILL(err) {
				t.Fatalf("crashing run ended with %v, want SIGKILL at step %d:\n%s", err, step, ch.output())
			}
			cat := &syncCatalog{parts: map[string][]hours.Partition{}}
			cp, err := compact.New(compact.Config{FS: fsys, Base: base, Delay: time.Minute, Catalog: cat, TargetFileSize: 1 << 20,
				ClosedThrough: func(ctx context.Context) (time.Time, error) { return loader.CommittedThrough(ctx, fsys, base, job) }})
			if err != nil {
				t.Fatal(err)
			}
			ready := func(stage string) int {
				t.Helper()
				if _, err := cp.Run(context.Background()); err != nil {
					t.Fatalf("%s: compact: %v", stage, err)
				}
				return checkReadyHours(t, fsys, base, d.topic, want, cat.parts[d.topic], stage)
			}
			ready("after the crash")
			runChild(t, cfg)
			if n := ready("after recovery"); n != 2 {
				t.Fatalf("after recovery %d hours ready, want both", n)
			}
		})
	}
}

// checkReadyHours checks every ready hour's records against want and the
// catalog's partitions against the ready hours; it returns how many are ready.
func checkReadyHours(t *testing.T, fsys filesys.FS, base, topic string, want map[time.Time]map[int64]bool, parts []hours.Partition, stage string) int {
	t.Helper()
	sts, err := hours.Statuses(fsys, base, topic, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	byStart := map[time.Time]hours.Partition{}
	for _, p := range parts {
		byStart[p.Start] = p
	}
	ready := 0
	for _, st := range sts {
		p, inCatalog := byStart[st.Start]
		if !st.Ready() {
			if inCatalog {
				t.Fatalf("%s: %s is %s but in the catalog", stage, st.Hour, st.State)
			}
			continue
		}
		ready++
		if !inCatalog || p.Location != st.Location || p.Format != string(st.Format) {
			t.Fatalf("%s: ready %s at %s (%s), catalog %+v", stage, st.Hour, st.Location, st.Format, p)
		}
		data, err := hours.HourData(fsys, st.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]bool{}
		for _, f := range data {
			if f.Dir != "" && f.Dir != st.Location {
				t.Fatalf("%s: %s: data file %s outside the location %s", stage, st.Hour, f.Path(), st.Location)
			}
			if _, err := rows.Read(fsys, f, func(rec map[string]any) error {
				id := rec["id"].(int64)
				if got[id] {
					return fmt.Errorf("record %d twice", id)
				}
				got[id] = true
				return nil
			}); err != nil {
				t.Fatalf("%s: %s: %v", stage, f.Path(), err)
			}
		}
		if w := want[st.Start]; len(got) != len(w) {
			t.Fatalf("%s: ready %s holds %d records, want %d", stage, st.Hour, len(got), len(w))
		}
		for id := range got {
			if !want[st.Start][id] {
				t.Fatalf("%s: ready %s holds record %d of another hour", stage, st.Hour, id)
			}
		}
	}
	if len(parts) != ready {
		t.Fatalf("%s: catalog %+v, %d ready hours", stage, parts, ready)
	}
	return ready
}
