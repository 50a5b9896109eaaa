package retention

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

func TestRetention(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	now := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
	// pv: hours from 10 h ago to now; ck: from 3 days ago, one a day.
	for h := 0; h <= 10; h++ {
		start := now.Truncate(time.Hour).Add(-time.Duration(h) * time.Hour)
		name := path.Join(hours.Dir(base, "pv", start), hours.LoaderFile{Topic: "pv", First: int64(h), Last: int64(h), SchemaID: 1, Format: hours.Avro}.Name())
		if err := filesys.WriteFile(fsys, name, []byte(strings.Repeat("x", h+1))); err != nil {
			t.Fatal(err)
		}
	}
	for d := 0; d <= 3; d++ {
		start := now.Truncate(time.Hour).Add(-time.Duration(d) * 24 * time.Hour)
		name := path.Join(hours.Dir(base, "ck", start), hours.LoaderFile{Topic: "ck", SchemaID: 1, Format: hours.Avro}.Name())
		if err := filesys.WriteFile(fsys, name, []byte("y")); err != nil {
			t.Fatal(err)
		}
	}
	// Not data: left alone whatever their age.
	if err := filesys.WriteFile(fsys, path.Join(base, "_loader", "job", "x"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Config{FS: fsys, Base: base, MaxAge: 48 * time.Hour,
		Topics: map[string]time.Duration{"pv": 5 * time.Hour}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// An hour goes once its end is the age old: pv's hours ending by 07:30
	// (02..06), ck's ending by 2026-03-08 12:30 (the one ending 13:00 is
	// 47.5 h old and stays).
	var got []string
	for _, r := range sum.Removed {
		got = append(got, r.Hour)
	}
	want := []string{
		"ck/2026/03/07/12",
		"pv/2026/03/10/02", "pv/2026/03/10/03", "pv/2026/03/10/04", "pv/2026/03/10/05", "pv/2026/03/10/06",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("removed %v\nwant    %v", got, want)
	}
	if sum.HoursRemoved != 6 || sum.FilesRemoved != 6 || sum.BytesRemoved != 1+(11+10+9+8+7) {
		t.Errorf("summary %+v", sum)
	}
	left, _ := hours.List(fsys, base, "pv")
	if len(left) != 6 || left[0].Start != time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC) {
		t.Errorf("pv hours left: %v", left)
	}
	// Emptied day directories went too; the not-data tree stayed.
	if ok, _ := filesys.Exists(fsys, path.Join(base, "ck", "2026", "03", "07")); ok {
		t.Error("emptied day directory kept")
	}
	if ok, _ := filesys.Exists(fsys, path.Join(base, "_loader", "job", "x")); !ok {
		t.Error("retention touched _loader")
	}
	// A second run removes nothing.
	if sum, err := Run(context.Background(), Config{FS: fsys, Base: base, MaxAge: 48 * time.Hour,
		Topics: map[string]time.Duration{"pv": 5 * time.Hour}, Now: func() time.Time { return now }}); err != nil || sum.HoursRemoved != 0 {
		t.Errorf("second run %+v, %v", sum, err)
	}
}

func TestRetentionConfig(t *testing.T) {
	for _, c := range []Config{{}, {FS: filesys.Local(), Base: "/x"}, {FS: filesys.Local(), Base: "/x", MaxAge: -time.Hour},
		{FS: filesys.Local(), Base: "/x", Topics: map[string]time.Duration{"a": 0}}} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig", c, err)
		}
	}
}
