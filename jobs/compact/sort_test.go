package compact

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// TestSortByEveryOrderedType compacts one topic per sort key over the test
// schema's ordered types (decimals with negative values, nullable
// timestamps, booleans, bytes, times of day, floats, strings) and checks
// with pyarrow that every row is back (as a multiset) and each file is in
// key order, nulls first: Go's order is the one readers see.
func TestSortByEveryOrderedType(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	keys := map[string][]string{
		"by-price":    {"price"},
		"by-ok-ts":    {"ok", "ts_us"},
		"by-referrer": {"referrer", "payload"},
		"by-at":       {"at", "ratio"},
		"by-user":     {"user", "score"},
	}
	local := t.TempDir()
	orig := map[string][]string{}
	dirsOf := map[string][]string{}
	avroRows := map[string][]string{}
	for topic := range keys {
		dirsOf[topic] = writeHours(t, fsys, base, topic, hour0, 2, 3, 50)
		avroRows[topic] = rowTexts(readTopicOf(t, fsys, base, topic, hours.Avro))
		for i, d := range dirsOf[topic] {
			names, err := hours.DataFiles(fsys, d)
			if err != nil {
				t.Fatal(err)
			}
			orig[d] = copyOut(t, fsys, d, names, filepath.Join(local, "orig", topic, fmt.Sprint(i)))
		}
	}
	// A small target makes several files an hour, each sorted on its own.
	c, err := New(Config{FS: fsys, Base: base, SortBy: keys, TargetFileSize: 4 << 10, ClosedThrough: closedAll})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.HoursCompacted != 10 || sum.SortedRuns != 10 || sum.FilesOut <= 10 {
		t.Errorf("summary %+v: want 10 hours compacted in 10 sorted runs, into more than 10 files", sum)
	}
	// Package rows reads the same rows.
	for topic := range keys {
		if got := rowTexts(readTopicOf(t, fsys, base, topic, hours.Parquet)); !slices.Equal(got, avroRows[topic]) || len(got) != 300 {
			t.Errorf("%s: package rows read %d rows, not the Avro's %d", topic, len(got), len(avroRows[topic]))
		}
	}
	checks := map[string]check{}
	for topic, dirs := range dirsOf {
		for i, d := range dirs {
			names := compactedFiles(t, fsys, d)
			checks[fmt.Sprintf("%s-hour%d", topic, i)] = check{Avro: orig[d], Parquet: copyOut(t, fsys, d, names, filepath.Join(local, "pq", topic, fmt.Sprint(i))),
				Unordered: true, SortedBy: keys[topic]}
		}
	}
	t.Logf("pyarrow vs fastavro: %v", comparePython(t, checks))
}

// rowTexts is rows as sorted texts, to compare as multisets.
func rowTexts(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(comparable(r))
	}
	slices.Sort(out)
	return out
}

// TestSortBufferBound: an hour bigger than SortBufferBytes is written in
// several sorted runs, every row still there.
func TestSortBufferBound(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeHours(t, fsys, base, "pv", hour0, 1, 4, 100)
	names, err := hours.DataFiles(fsys, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	orig := copyOut(t, fsys, dirs[0], names, filepath.Join(local, "orig"))
	// The test record is about 3 KB decoded: 64 KiB holds some 20 rows.
	c, err := New(Config{FS: fsys, Base: base, SortBy: map[string][]string{"pv": {"user"}}, SortBufferBytes: 64 << 10, ClosedThrough: closedAll})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.HoursCompacted != 1 || sum.SortedRuns < 5 || sum.Records != 400 {
		t.Errorf("summary %+v: want 400 records of 1 hour in several sorted runs", sum)
	}
	pq := copyOut(t, fsys, dirs[0], compactedFiles(t, fsys, dirs[0]), filepath.Join(local, "pq"))
	comparePython(t, map[string]check{"hour": {Avro: orig, Parquet: pq, Unordered: true}})
}

// TestSortByColumnNotInSchema: a sort column the hour's schema lacks, or
// one of a type without an order, fails that topic's hours with
// ErrInvalidConfig naming the topic and the column; they stay Avro, and other
// topics are compacted.
func TestSortByColumnNotInSchema(t *testing.T) {
	for _, col := range []string{"user_name", "tags", "attrs", "device", "extra"} {
		t.Run(col, func(t *testing.T) {
			fsys, base := filesys.Local(), t.TempDir()
			bad := writeHours(t, fsys, base, "pv", hour0, 1, 2, 10)
			writeHours(t, fsys, base, "other", hour0, 1, 2, 10)
			c, err := New(Config{FS: fsys, Base: base, ClosedThrough: closedAll,
				SortBy: map[string][]string{"pv": {"user", col}, "other": {"seq"}}})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := c.Run(context.Background())
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `topic "pv"`) || !strings.Contains(err.Error(), fmt.Sprintf("column %q", col)) {
				t.Errorf("run error %v: want ErrInvalidConfig naming topic \"pv\" and column %q", err, col)
			}
			if sum.HoursCompacted != 1 || len(sum.HoursFailed) != 1 || sum.SortedRuns != 1 {
				t.Errorf("summary %+v: want the other topic's hour compacted (sorted) and pv's failed", sum)
			}
			names, _ := hours.DataFiles(fsys, bad[0])
			if len(names) != 2 || !strings.HasSuffix(names[0], ".avro") || !strings.HasSuffix(names[1], ".avro") {
				t.Errorf("failed hour shows %v, want its 2 Avro files", names)
			}
		})
	}
}

// TestSortByConfig: the CLI's TOPIC=COL[,COL...] and Config.Validate.
func TestSortByConfig(t *testing.T) {
	got, err := ParseSortBy([]string{"pv=user", "requests= user_id , ts"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{"pv": {"user"}, "requests": {"user_id", "ts"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseSortBy = %v, want %v", got, want)
	}
	for _, c := range []struct{ spec, want string }{
		{"pv", `"pv": want TOPIC=COL`},
		{"=user", `"=user": want TOPIC=COL`},
		{"pv=", `"pv=": want TOPIC=COL`},
		{"pv=user,,ts", `topic "pv": column "" is not a field name`},
		{"pv=user id", `topic "pv": column "user id" is not a field name`},
		{"pv=user,user", `topic "pv": column "user" given twice`},
	} {
		_, err := ParseSortBy([]string{c.spec})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSortBy(%q) = %v, want ErrInvalidConfig with %q", c.spec, err, c.want)
		}
	}
	if _, err := ParseSortBy([]string{"pv=user", "pv=seq"}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `topic "pv" given twice`) {
		t.Errorf("a topic twice: %v", err)
	}
	for _, sortBy := range []map[string][]string{{"pv": nil}, {"": {"user"}}, {"pv": {"1st"}}} {
		_, err := New(Config{FS: filesys.Local(), Base: t.TempDir(), ClosedThrough: closedAll, SortBy: sortBy})
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New with SortBy %v: %v, want ErrInvalidConfig", sortBy, err)
		}
	}
	if _, err := New(Config{FS: filesys.Local(), Base: t.TempDir(), ClosedThrough: closedAll, SortBufferBytes: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative SortBufferBytes: %v", err)
	}
}

// TestSortBufferOrder: rows come out by key, nulls first, ties in their
// input order, in runs once the buffer is full.
func TestSortBufferOrder(t *testing.T) {
	row := func(id int, grp any, amount *big.Rat) map[string]any {
		return map[string]any{"id": int64(id), "grp": grp, "amount": amount}
	}
	in := []map[string]any{
		row(0, goavro.Union("string", "b"), big.NewRat(5, 1)),
		row(1, nil, big.NewRat(-3, 2)),
		row(2, goavro.Union("string", "a"), big.NewRat(5, 1)),
		row(3, goavro.Union("string", "b"), big.NewRat(-1, 1)),
		row(4, nil, big.NewRat(-3, 2)),
		row(5, goavro.Union("string", "a"), big.NewRat(1, 10)),
	}
	key := []sortColumn{{field: "grp", unwrap: true}, {field: "amount"}}
	var ids []int64
	write := func(rec any) error {
		ids = append(ids, rec.(map[string]any)["id"].(int64))
		return nil
	}
	b := &sortBuffer{key: key, limit: 1 << 30}
	for _, r := range in {
		if b.add(r) {
			t.Fatal("buffer full")
		}
	}
	if err := b.flush(write); err != nil {
		t.Fatal(err)
	}
	// nulls (1, 4: equal, in input order), then "a" by amount (5, 2), then "b" (3, 0).
	if want := []int64{1, 4, 5, 2, 3, 0}; !slices.Equal(ids, want) {
		t.Errorf("order %v, want %v", ids, want)
	}
	// A buffer of the first three rows' size sorts in two runs of three.
	ids = nil
	size := func(r map[string]any) int64 { return nativeSize(r) + 40 + 16*int64(len(key)) }
	b = &sortBuffer{key: key, limit: size(in[0]) + size(in[1]) + size(in[2])}
	for _, r := range in {
		if b.add(r) {
			if err := b.flush(write); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.flush(write); err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 2, 0, 4, 5, 3}; !slices.Equal(ids, want) || b.runs != 2 {
		t.Errorf("order %v in %d runs, want %v in 2", ids, b.runs, want)
	}
}
