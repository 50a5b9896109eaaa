package hours

import (
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

// TestReaderRuleGenerations: with a version 2 manifest an hour's data are
// the outputs in its committed generation directory plus late loader
// files; other generations and staged names are ignored.
func TestReaderRuleGenerations(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	h := Hour{Topic: "pv", Start: start, Dir: Dir(base, "pv", start)}
	in := LoaderFile{Topic: "pv", Partition: 0, First: 0, Last: 9, SchemaID: 7, Format: Avro}.Name()
	out := CompactedFile{Topic: "pv", SchemaID: 7}.Name()
	write := func(dir, name string) {
		t.Helper()
		if err := filesys.WriteFile(fsys, path.Join(dir, name), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	write(h.Dir, in)
	write(GenerationDir(h, 1), out) // staged: no manifest yet
	check := func(want ...string) {
		t.Helper()
		got, err := DataFiles(fsys, h.Dir)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("data files %v, %v; want %v", got, err, want)
		}
	}
	check(in)
	if list, err := List(fsys, base, "pv"); err != nil || len(list) != 1 {
		t.Fatalf("a generation directory is not an hour: %+v, %v", list, err)
	}
	m, _ := json.Marshal(Manifest{Version: ManifestVersion, Generation: 1, Inputs: []File{{Name: in}}, Outputs: []File{{Name: out}}})
	if err := filesys.WriteFile(fsys, path.Join(h.Dir, Marker), m); err != nil {
		t.Fatal(err)
	}
	check("../12.c1/" + out)
	write(GenerationDir(h, 2), out) // a newer, uncommitted generation
	late := LoaderFile{Topic: "pv", Partition: 1, First: 5, Last: 5, SchemaID: 8, Format: Avro}.Name()
	write(h.Dir, late)
	check("../12.c1/"+out, late)
	st, err := StatusOf(fsys, h, start.Add(2*time.Hour), time.Minute)
	if err != nil || st.State != StateCompacted || st.Location != GenerationDir(h, 1) || st.Format != Parquet ||
		st.Files != 1 || st.LateFiles != 1 || st.SchemaID != 7 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if pub, err := Published(fsys, base, "pv"); err != nil || len(pub) != 0 {
		t.Fatalf("published without _SUCCESS: %+v, %v", pub, err)
	}
	write(h.Dir, SuccessMarker)
	if _, err := Published(fsys, base, "pv"); !errors.Is(err, ErrCorruptLayout) {
		t.Fatalf("a _SUCCESS that is not JSON: %v, want ErrCorruptLayout", err)
	}
	if err := fsys.RemoveAll(GenerationDir(h, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := DataFiles(fsys, h.Dir); !errors.Is(err, ErrCorruptManifest) {
		t.Fatalf("the committed generation gone: %v, want ErrCorruptManifest", err)
	}
}

// TestSubHourLayout: a topic's _partitioning marker makes List read
// <HH>/<mm> partitions of its duration; other names and unaligned minutes
// are skipped.
func TestSubHourLayout(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	if err := filesys.WriteFile(fsys, path.Join(base, "pv", PartitioningFile), EncodePartitioning(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 10, 23, 55, 0, 0, time.UTC)
	var want []time.Time
	for i, at := range []time.Time{t0.Add(time.Minute), t0.Add(7 * time.Minute)} {
		d := DirFor(base, "pv", at, 5*time.Minute)
		want = append(want, at.Truncate(5*time.Minute))
		if err := filesys.WriteFile(fsys, path.Join(d, LoaderFile{Topic: "pv", First: int64(i), Last: int64(i), SchemaID: 1, Format: Avro}.Name()), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := DirFor(base, "pv", t0.Add(7*time.Minute), 5*time.Minute); got != path.Join(base, "pv", "2026/03/11/00/00") {
		t.Fatalf("DirFor %s", got)
	}
	for _, bad := range []string{"2026/03/11/00/03", "2026/03/11/00/00.c1", "2026/03/11/00/xx"} {
		if err := fsys.MkdirAll(path.Join(base, "pv", bad)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := List(fsys, base, "pv")
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v, %v", list, err)
	}
	for i, h := range list {
		if !h.Start.Equal(want[i]) || h.Len() != 5*time.Minute || !h.End().Equal(want[i].Add(5*time.Minute)) {
			t.Fatalf("partition %d: %+v", i, h)
		}
	}
	if list[1].String() != "pv/2026/03/11/00/00" {
		t.Fatalf("name %s", list[1])
	}
	for _, d := range []time.Duration{7 * time.Minute, 90 * time.Second, 5 * time.Hour, 0} {
		if ValidDuration(d) == nil {
			t.Errorf("duration %v accepted", d)
		}
	}
	for _, d := range []time.Duration{time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour} {
		if err := ValidDuration(d); err != nil {
			t.Errorf("duration %v: %v", d, err)
		}
	}
}
