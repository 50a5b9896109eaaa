package compact

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/loader"
)

var hour0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// compactAndCompare writes 3 hours plus an open 4th, compacts the closed
// ones and checks with pyarrow/fastavro that each hour's Parquet rows are
// the Avro rows, in order.
func compactAndCompare(t *testing.T, fsys filesys.FS, base string, codec string) {
	ctx := context.Background()
	dirs := writeHours(t, fsys, base, "pv", hour0, 4, 3, 50)
	// Keep the originals to compare against after they are deleted.
	orig := map[string][]string{}
	local := t.TempDir()
	for i, d := range dirs {
		names, err := hours.DataFiles(fsys, d)
		if err != nil || len(names) != 3 {
			t.Fatalf("hour %d data files %v, %v", i, names, err)
		}
		orig[d] = copyOut(t, fsys, d, names, filepath.Join(local, "orig", fmt.Sprint(i)))
	}
	// Hours 0..2 are closed: the loader committed to hour 3 + 1 min, delay 1 min.
	writeLoaderCommit(t, fsys, base, "load", "pv", hour0.Add(3*time.Hour+time.Minute))
	c, err := New(Config{FS: fsys, Base: base, Delay: time.Minute, Codec: codec, TargetFileSize: 8 << 10,
		ClosedThrough: func(ctx context.Context) (time.Time, error) { return loader.CommittedThrough(ctx, fsys, base, "load") }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.HoursCompacted != 3 || sum.HoursOpen != 1 || sum.FilesIn != 9 || sum.Records != 450 {
		t.Errorf("summary %+v: want 3 hours (9 files, 450 records) compacted and 1 open", sum)
	}
	if sum.FilesOut <= 3 {
		t.Errorf("%d Parquet files for 3 hours at an 8 KiB target: want several per hour", sum.FilesOut)
	}
	checks := map[string]check{}
	for i, d := range dirs[:3] {
		names := compactedFiles(t, fsys, d)
		list, _ := fsys.ReadDir(d)
		var all []string
		for _, fi := range list {
			all = append(all, fi.Name())
		}
		if strings.Contains(strings.Join(all, " "), ".avro") || strings.Contains(strings.Join(all, " "), hours.TmpDir) {
			t.Errorf("hour %d keeps inputs or staging: %v", i, all)
		}
		checks[fmt.Sprintf("hour%d", i)] = check{Avro: orig[d], Parquet: copyOut(t, fsys, d, names, filepath.Join(local, "pq", fmt.Sprint(i)))}
	}
	// The open hour is untouched.
	if names, _ := hours.DataFiles(fsys, dirs[3]); len(names) != 3 || !strings.HasSuffix(names[0], ".avro") {
		t.Errorf("open hour compacted: %v", names)
	}
	res := comparePython(t, checks)
	t.Logf("pyarrow vs fastavro: %v", res)

	// A second run has nothing to do.
	sum, err = c.Run(ctx)
	if err != nil || sum.HoursCompacted != 0 || sum.HoursRecovered != 0 {
		t.Errorf("second run: %+v, %v", sum, err)
	}
}

func TestCompactLocal(t *testing.T) {
	compactAndCompare(t, filesys.Local(), t.TempDir(), "snappy")
}

func TestCompactLocalZstd(t *testing.T) {
	compactAndCompare(t, filesys.Local(), t.TempDir(), "zstd")
}

func TestCompactHDFS(t *testing.T) {
	fsys, base := openHDFS(t)
	compactAndCompare(t, fsys, base, "snappy")
}

// TestReaderRuleLateFile: a late file that does not decode fails the
// hour's recompaction, named in the error, and leaves the hour as it was:
// readers see the Parquet of generation 1 and the late file, the catalog
// keeps generation 1.
func TestReaderRuleLateFile(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeHours(t, fsys, base, "pv", hour0, 1, 2, 10)
	cat := &memCatalog{}
	c, err := New(Config{FS: fsys, Base: base, Catalog: cat, ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(2 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	late := "pv+1+99999+99999+s7.avro"
	if err := filesys.WriteFile(fsys, path.Join(dirs[0], late), []byte("x")); err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "pv/2026/03/01/10") || sum.LateFiles != 1 || sum.HoursRecompacted != 0 {
		t.Errorf("run with a corrupt late file: %+v, %v: want the hour's failure reported", sum, err)
	}
	names, _ := hours.DataFiles(fsys, dirs[0])
	sort.Strings(names)
	if len(names) != 2 || names[0] != "../10.c1/pv+s7+000.parquet" || names[1] != late {
		t.Errorf("data files %v: want generation 1's Parquet file and the late Avro file", names)
	}
	if p := cat.parts["pv"]; len(p) != 1 || !strings.HasSuffix(p[0].Location, "10.c1") {
		t.Errorf("catalog %+v: want generation 1", p)
	}
	if gs, _ := hours.Generations(fsys, hours.Hour{Dir: dirs[0]}); len(gs) != 1 {
		t.Errorf("generations %v after the failed recompaction (and its next run's recovery)", gs)
	}
}

func TestCorruptHourDoesNotBlockOthers(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeHours(t, fsys, base, "pv", hour0, 3, 2, 10)
	bad := path.Join(dirs[1], "pv+0+999+999+s7.avro")
	if err := filesys.WriteFile(fsys, bad, []byte("not avro")); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{FS: fsys, Base: base, ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(5 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "pv/2026/03/01/11") || sum.HoursCompacted != 2 || len(sum.HoursFailed) != 1 {
		t.Fatalf("run with a corrupt hour: %+v, %v", sum, err)
	}
	names, _ := hours.DataFiles(fsys, dirs[1])
	if len(names) != 3 || !strings.HasSuffix(names[2], ".avro") {
		t.Errorf("failed hour shows %v, want its 3 Avro files", names)
	}
	if err := fsys.Remove(bad); err != nil {
		t.Fatal(err)
	}
	sum, err = c.Run(context.Background())
	if err != nil || sum.HoursCompacted != 1 || sum.Records != 20 {
		t.Errorf("after removing the corrupt file: %+v, %v", sum, err)
	}
}
