package retention

import (
	"context"
	"encoding/json"
	"path"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// checkingCatalog fails the test if a sync names a location that is gone.
type checkingCatalog struct {
	t     *testing.T
	fsys  filesys.FS
	parts map[string][]hours.Partition
}

func (c *checkingCatalog) Sync(_ context.Context, topic string, want []hours.Partition) error {
	for _, p := range c.parts[topic] {
		if ok, _ := filesys.Exists(c.fsys, p.Location); !ok {
			c.t.Errorf("the catalog pointed at %s after it was deleted", p.Location)
		}
	}
	c.parts[topic] = want
	return nil
}

// TestRetentionDropsPartitions: expired ready hours leave the catalog
// before their directories (and compaction generations) are deleted;
// the others stay registered at their locations.
func TestRetentionDropsPartitions(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	now := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
	var hs []hours.Hour
	for i := 0; i < 4; i++ {
		start := now.Truncate(time.Hour).Add(-time.Duration(i+1) * time.Hour)
		h := hours.Hour{Topic: "pv", Start: start, Dir: hours.Dir(base, "pv", start)}
		hs = append(hs, h)
		in := hours.LoaderFile{Topic: "pv", First: int64(i), Last: int64(i), SchemaID: 1, Format: hours.Avro}.Name()
		write := func(name string, b []byte) {
			if err := filesys.WriteFile(fsys, name, b); err != nil {
				t.Fatal(err)
			}
		}
		write(path.Join(h.Dir, hours.SuccessMarker), []byte(`{"version":1,"state":"ready","basis":"audit"}`))
		if i%2 == 0 { // compacted: generation 1 holds the Parquet file
			out := hours.CompactedFile{Topic: "pv", SchemaID: 1}.Name()
			m, _ := json.Marshal(hours.Manifest{Version: hours.ManifestVersion, Generation: 1,
				Inputs: []hours.File{{Name: in}}, Outputs: []hours.File{{Name: out}}})
			write(path.Join(h.Dir, hours.Marker), m)
			write(path.Join(hours.GenerationDir(h, 1), out), []byte("pq"))
		} else {
			write(path.Join(h.Dir, in), []byte("avro"))
		}
	}
	cat := &checkingCatalog{t: t, fsys: fsys, parts: map[string][]hours.Partition{}}
	if err := hours.SyncCatalog(context.Background(), cat, fsys, base, "pv", nil); err != nil || len(cat.parts["pv"]) != 4 {
		t.Fatalf("initial sync: %v, %+v", err, cat.parts)
	}
	// An age of 2h30m expires the hours ending by 10:00: the 3rd and 4th.
	sum, err := Run(context.Background(), Config{FS: fsys, Base: base, Topics: map[string]time.Duration{"pv": 150 * time.Minute},
		Now: func() time.Time { return now }, Catalog: cat})
	if err != nil || sum.HoursRemoved != 2 || sum.FilesRemoved != 2 {
		t.Fatalf("run %+v, %v", sum, err)
	}
	got := cat.parts["pv"]
	if len(got) != 2 || got[0].Location != hs[1].Dir || got[1].Location != hours.GenerationDir(hs[0], 1) {
		t.Fatalf("catalog after retention %+v", got)
	}
	for _, h := range hs[2:] {
		for _, d := range []string{h.Dir, hours.GenerationDir(h, 1)} {
			if ok, _ := filesys.Exists(fsys, d); ok {
				t.Errorf("%s kept", d)
			}
		}
	}
	// A later sync sees nothing missing.
	if err := hours.SyncCatalog(context.Background(), cat, fsys, base, "pv", nil); err != nil || len(cat.parts["pv"]) != 2 {
		t.Fatalf("sync after retention: %v, %+v", err, cat.parts)
	}
}
