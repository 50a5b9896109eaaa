package compact

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// crashParallel is how many of the crash tests (the local one, the HDFS
// one and the two Kerberized ones) run at once unless -test.parallel is
// given: they wait on child processes and NameNodes, not on the CPU, so
// all four, not GOMAXPROCS. The size tests (sizeParallel) are parallel
// tests too: they take the slot of a crash test that ended.
const crashParallel = 4

func TestMain(m *testing.M) { os.Exit(testproc.MainParallel(m, crashParallel)) }

// TestCrashAtEveryStepLocal and ...HDFS SIGKILL `tributary jobs compact`
// at each of its file-system steps in turn (EnvCrashAt): readiness
// (_SUCCESS), the catalog syncs, the swap into a generation directory, and
// in a second pass the recompaction of late files. They check that every
// hour then shows readers either exactly its original Avro files or a
// complete set of Parquet files, and that the catalog (a --catalog-file)
// points only at complete locations of one format; run compaction again to
// completion (which recovers first), check that the catalog holds exactly
// the ready hours at their locations, and compare every Parquet view with
// the Avro rows through pyarrow and fastavro.
//
// They run side by side (t.Parallel, crashParallel at once; the
// Kerberized clusters' runs too): each step is mostly a child process
// waiting on its file system.
func TestCrashAtEveryStepLocal(t *testing.T) {
	t.Parallel()
	crashAtEveryStep(t, filesys.Local(), t.TempDir(), func(base string) []string { return []string{"--base", base} }, 3, "6KiB")
}

func TestCrashAtEveryStepHDFS(t *testing.T) {
	t.Parallel()
	fsys, base := openHDFS(t)
	addr := strings.TrimPrefix(os.Getenv("TRIBUTARY_TEST_HDFS"), "hdfs://")
	// One Avro file and one Parquet file per hour keeps the number of
	// steps (each a child process talking to the NameNode) small.
	crashAtEveryStep(t, fsys, base, func(b string) []string { return []string{"--base", "hdfs://" + addr + b} }, 1, "1MiB")
}

// TestCrashAtEveryStepKerberos is TestCrashAtEveryStepHDFS on the
// Kerberized clusters, the command logging in through --hdfs-config.
func TestCrashAtEveryStepKerberos(t *testing.T) {
	t.Parallel()
	for _, protection := range testenv.KerberizedHDFSProtections {
		t.Run(protection, func(t *testing.T) {
			t.Parallel()
			fsys, base, addr, config := openKerberizedHDFS(t, protection)
			crashAtEveryStep(t, fsys, base, func(b string) []string {
				return []string{"--base", "hdfs://" + addr + b, "--hdfs-config", config}
			}, 1, "1MiB")
		})
	}
}

// crashAtEveryStep runs the compaction of root's hours in fsys with the
// arguments baseArgs gives for a base directory (--base and what else
// reaches it).
func crashAtEveryStep(t *testing.T, fsys filesys.FS, root string, baseArgs func(string) []string, files int, target string) {
	local := t.TempDir()
	// The originals, written once and copied out for the comparison.
	origBase := path.Join(root, "orig")
	origDirs := writeHours(t, fsys, origBase, "pv", hour0, 3, files, 40)
	var orig [][]string
	var origNames [][]string
	for i, d := range origDirs {
		names, _ := hours.DataFiles(fsys, d)
		origNames = append(origNames, names)
		orig = append(orig, copyOut(t, fsys, d, names, filepath.Join(local, "orig", fmt.Sprint(i))))
	}
	closed := hour0.Add(3*time.Hour + time.Minute).Format(time.RFC3339)
	run := func(base, catalog string, crashAt int) (killed bool, out string) {
		args := append([]string{"jobs", "compact"}, baseArgs(base)...)
		return testproc.RunCrashable(t, []string{fmt.Sprintf("%s=%d", EnvCrashAt, crashAt)}, append(args, "--closed-through", closed,
			"--catalog-file", catalog, "--delay", "1m", "--target-file-size", target, "--log-level", "warn")...)
	}

	checks := map[string]check{}
	crashes := 0
	for _, late := range []bool{false, true} {
		phase := "compaction"
		if late {
			phase = "recompaction"
		}
		for n := 1; n < 500; n++ {
			base := path.Join(root, fmt.Sprintf("%s%03d", phase, n))
			catalog := filepath.Join(local, fmt.Sprintf("catalog-%s%03d.json", phase, n))
			dirs := writeHours(t, fsys, base, "pv", hour0, 3, files, 40)
			want := orig
			if late {
				if killed, out := run(base, catalog, 0); killed {
					t.Fatalf("first compaction killed: %s", out)
				}
				want = addLate(t, fsys, base, dirs, filepath.Join(local, "late"), orig)
			}
			killed, out := run(base, catalog, n)
			if !killed {
				t.Logf("%s takes %d steps; crashed at each of 1..%d", phase, n-1, n-1)
				break
			}
			crashes++
			view := func(stage string) {
				for i, d := range dirs {
					names, err := hours.DataFiles(fsys, d)
					if err != nil {
						t.Fatalf("%s crash at %d, %s, hour %d: %v", phase, n, stage, i, err)
					}
					if !late && strings.Join(names, ",") == strings.Join(origNames[i], ",") {
						continue // the Avro files, untouched
					}
					var pq []string
					for _, nm := range names {
						if strings.HasSuffix(nm, ".parquet") {
							pq = append(pq, nm)
						} else if !late {
							t.Fatalf("%s crash at %d, %s, hour %d: readers see a mix: %v", phase, n, stage, i, names)
						}
					}
					if len(pq) == 0 {
						t.Fatalf("%s crash at %d, %s, hour %d: readers see no Parquet data: %v", phase, n, stage, i, names)
					}
					key := fmt.Sprintf("%s%03d-%s-hour%d", phase, n, stage, i)
					rows := want[i]
					if len(pq) != len(names) {
						// Not recompacted yet: the reader rule shows the
						// previous generation (the original rows) and the
						// late Avro file.
						if len(names)-len(pq) != 1 {
							t.Fatalf("%s crash at %d, %s, hour %d: readers see %v: want Parquet and one late file", phase, n, stage, i, names)
						}
						rows = orig[i]
					}
					checks[key] = check{Avro: rows, Parquet: copyOut(t, fsys, d, pq, filepath.Join(local, key))}
				}
				checkCatalog(t, fsys, catalog, dirs, origNames, orig, want, stage == "recovered", checks, fmt.Sprintf("%s%03d-%s", phase, n, stage), local)
			}
			view("crashed")
			if killed, out2 := run(base, catalog, 0); killed {
				t.Fatalf("recovery run killed: %s", out2)
			}
			view("recovered")
			for i, d := range dirs {
				list, _ := fsys.ReadDir(d)
				var all []string
				for _, fi := range list {
					all = append(all, fi.Name())
				}
				sort.Strings(all)
				for _, nm := range all {
					if strings.HasSuffix(nm, ".avro") || nm == hours.TmpDir || nm == hours.MarkerTmp || nm == hours.SuccessTmp {
						t.Fatalf("%s crash at %d: after recovery hour %d still has %v (output %s)", phase, n, i, all, out)
					}
				}
				if gs, _ := hours.Generations(fsys, hours.Hour{Dir: d}); len(gs) != 1 {
					t.Fatalf("%s crash at %d: after recovery hour %d has generations %v", phase, n, i, gs)
				}
			}
			_ = fsys.RemoveAll(base)
		}
	}
	if crashes < 2*6*3 {
		t.Fatalf("only %d crash points", crashes)
	}
	res := comparePython(t, checks)
	t.Logf("%d crash points, %d Parquet views compared with the Avro rows", crashes, len(res))
}

// addLate writes one late Avro file into each compacted hour of base (its
// records those of a scratch hour, under offsets of their own) and returns
// each hour's expected Avro files: orig plus its late one.
func addLate(t *testing.T, fsys filesys.FS, base string, dirs []string, local string, orig [][]string) [][]string {
	t.Helper()
	scratch := path.Join(base, "_scratch")
	lateDirs := writeHours(t, fsys, scratch, "pv", hour0, 3, 1, 5)
	var want [][]string
	for i, d := range dirs {
		names := mustNames(t, fsys, lateDirs[i])
		lf, _ := hours.ParseLoaderFile(names[0])
		lf.First, lf.Last = lf.First+90000, lf.Last+90000
		if err := fsys.Rename(path.Join(lateDirs[i], names[0]), path.Join(d, lf.Name())); err != nil {
			t.Fatal(err)
		}
		w := append(append([]string(nil), orig[i]...), copyOut(t, fsys, d, []string{lf.Name()}, filepath.Join(local, fmt.Sprint(i), path.Base(base)))...)
		want = append(want, w)
	}
	_ = fsys.RemoveAll(scratch)
	return want
}

// checkCatalog checks the catalog file against the files: every partition
// at a location that exists and holds one format only: the original Avro
// files, or Parquet with the rows of the generation (queued for the Python
// comparison). With exact, also that it holds every ready hour at the
// location the reader rule gives.
func checkCatalog(t *testing.T, fsys filesys.FS, catalog string, dirs []string, origNames, orig, want [][]string, exact bool, checks map[string]check, key, local string) {
	t.Helper()
	all, err := hours.ReadFileCatalog(catalog)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[time.Time]hours.Partition{}
	for _, p := range all["pv"] {
		parts[p.Start] = p
	}
	for i, d := range dirs {
		h := hours.Hour{Topic: "pv", Start: hour0.Add(time.Duration(i) * time.Hour), Dir: d}
		p, ok := parts[h.Start]
		st, err := hours.StatusOf(fsys, h, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if exact && st.Ready() && (!ok || p.Location != st.Location || p.Format != string(st.Format)) {
			t.Fatalf("%s: hour %d is %s at %s (%s) but the catalog has %+v", key, i, st.State, st.Location, st.Format, p)
		}
		if !ok {
			continue
		}
		list, err := fsys.ReadDir(p.Location)
		if err != nil {
			t.Fatalf("%s: hour %d: the catalog points at %s: %v", key, i, p.Location, err)
		}
		var names []string
		for _, fi := range list {
			if !fi.IsDir() && hours.IsData(fi.Name()) {
				names = append(names, fi.Name())
				if !strings.HasSuffix(fi.Name(), "."+p.Format) {
					t.Fatalf("%s: hour %d: the catalog's %s location %s holds %s", key, i, p.Format, p.Location, fi.Name())
				}
			}
			if fi.IsDir() {
				t.Fatalf("%s: hour %d: the catalog's location %s holds a directory %s", key, i, p.Location, fi.Name())
			}
		}
		sort.Strings(names)
		if p.Format == "avro" {
			if strings.Join(names, ",") != strings.Join(origNames[i], ",") {
				t.Fatalf("%s: hour %d: the catalog's Avro location holds %v, want %v", key, i, names, origNames[i])
			}
			continue
		}
		gen, _ := hours.ParseGeneration(path.Base(d), path.Base(p.Location))
		rows := want[i]
		if gen == 1 {
			rows = orig[i]
		}
		k := fmt.Sprintf("%s-catalog-hour%d", key, i)
		checks[k] = check{Avro: rows, Parquet: copyOut(t, fsys, p.Location, names, filepath.Join(local, k))}
	}
}
