package compact

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
)

// TestRowsReadCompactedAsAvro: package rows reads a compacted hour's
// Parquet files as the same plain values, in the same order, as the Avro
// files they replaced (every type of testSchema, several Parquet files).
func TestRowsReadCompactedAsAvro(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	writeHours(t, fsys, base, "pv", hour0, 1, 3, 60)
	before := readTopic(t, fsys, base, hours.Avro)
	if len(before) != 180 {
		t.Fatalf("read %d Avro records, want 180", len(before))
	}
	c, err := New(Config{FS: fsys, Base: base, TargetFileSize: 8 << 10,
		ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(2 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := c.Run(context.Background()); err != nil || sum.HoursCompacted != 1 || sum.FilesOut < 2 {
		t.Fatalf("compaction: %+v, %v (want one hour, several files)", sum, err)
	}
	after := readTopic(t, fsys, base, hours.Parquet)
	if len(after) != len(before) {
		t.Fatalf("read %d Parquet records, want %d", len(after), len(before))
	}
	for i := range before {
		if a, p := comparable(before[i]), comparable(after[i]); !reflect.DeepEqual(a, p) {
			t.Fatalf("record %d:\n avro    %v\n parquet %v", i, a, p)
		}
	}
}

// TestRowsReadWideCompacted: package rows (parquet-go's reader) reads the
// encodings the trials choose on the wide sample (DELTA_LENGTH_BYTE_ARRAY
// strings, dictionaries of ints and floats, delta timestamps) as the same
// values as the Avro.
func TestRowsReadWideCompacted(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	s := wideSample(6000)
	s.hours = 1
	writeSample(t, fsys, base, s)
	before := readTopicOf(t, fsys, base, s.topic, hours.Avro)
	c, err := New(Config{FS: fsys, Base: base,
		ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(2 * time.Hour), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := c.Run(context.Background()); err != nil || sum.HoursCompacted != 1 {
		t.Fatalf("compaction: %+v, %v", sum, err)
	}
	after := readTopicOf(t, fsys, base, s.topic, hours.Parquet)
	if len(before) != 6000 || len(after) != len(before) {
		t.Fatalf("read %d Parquet records, %d Avro, want 6000", len(after), len(before))
	}
	for i := range before {
		if a, p := comparable(before[i]), comparable(after[i]); !reflect.DeepEqual(a, p) {
			t.Fatalf("record %d:\n avro    %v\n parquet %v", i, a, p)
		}
	}
}

// readTopic reads every data file of pv, which must all be in format f.
func readTopic(t *testing.T, fsys filesys.FS, base string, f hours.Format) []map[string]any {
	t.Helper()
	return readTopicOf(t, fsys, base, "pv", f)
}

// readTopicOf reads every data file of topic, which must all be in format f.
func readTopicOf(t *testing.T, fsys filesys.FS, base, topic string, f hours.Format) []map[string]any {
	t.Helper()
	files, err := hours.TopicData(fsys, base, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, d := range files {
		if d.Format != f {
			t.Fatalf("%s: format %s, want %s", d.Path(), d.Format, f)
		}
		if _, err := rows.Read(fsys, d, func(rec map[string]any) error { out = append(out, rec); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// comparable replaces decimals (whose representation may differ) by their
// exact text.
func comparable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = comparable(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = comparable(e)
		}
		return l
	case *big.Rat:
		return "decimal " + x.RatString()
	case time.Time:
		return fmt.Sprint("time ", x.UTC().Format(time.RFC3339Nano))
	}
	return v
}
