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

// TestReaderRule: before a marker an hour's data are its loader files
// (staged Parquet and other names aside); after it, the outputs the
// manifest names plus late loader files it does not name as inputs.
func TestReaderRule(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	dir := Dir(base, "pv", start.Add(30*time.Minute))
	in1 := LoaderFile{Topic: "pv", Partition: 0, First: 0, Last: 9, SchemaID: 7, Format: Avro}.Name()
	in2 := LoaderFile{Topic: "pv", Partition: 1, First: 0, Last: 4, SchemaID: 7, Format: Avro}.Name()
	out := CompactedFile{Topic: "pv", SchemaID: 7}.Name()
	for _, name := range []string{in1, in2, out, "notes.txt", "_compact_tmp/x", ".hidden.avro"} {
		if err := filesys.WriteFile(fsys, path.Join(dir, name), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want ...string) {
		t.Helper()
		got, err := DataFiles(fsys, dir)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("data files %v, %v; want %v", got, err, want)
		}
	}
	check(in1, in2)
	list, err := List(fsys, base, "pv")
	if err != nil || len(list) != 1 || !list[0].Start.Equal(start) || list[0].Dir != dir {
		t.Fatalf("hours %+v, %v", list, err)
	}
	m, _ := json.Marshal(Manifest{Version: ManifestV1, Inputs: []File{{Name: in1}, {Name: in2}}, Outputs: []File{{Name: out}}})
	if err := filesys.WriteFile(fsys, path.Join(dir, Marker), m); err != nil {
		t.Fatal(err)
	}
	check(out)
	late := LoaderFile{Topic: "pv", Partition: 2, First: 50, Last: 50, SchemaID: 7, Format: Avro}.Name()
	if err := filesys.WriteFile(fsys, path.Join(dir, late), []byte("x")); err != nil {
		t.Fatal(err)
	}
	check(late, out)
	data, err := TopicData(fsys, base, "pv")
	if err != nil || len(data) != 2 || data[0].Format != Avro || data[1].Format != Parquet || data[1].Path() != path.Join(dir, out) {
		t.Fatalf("topic data %+v, %v", data, err)
	}
	if err := fsys.Remove(path.Join(dir, out)); err != nil {
		t.Fatal(err)
	}
	if _, err := DataFiles(fsys, dir); !errors.Is(err, ErrCorruptManifest) {
		t.Fatalf("an output gone: %v, want ErrCorruptManifest", err)
	}
}
