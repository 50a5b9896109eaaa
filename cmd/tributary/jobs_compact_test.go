package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/xitongsys/parquet-go-source/buffer"
	"github.com/xitongsys/parquet-go/parquet"
	"github.com/xitongsys/parquet-go/reader"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/hours/rows"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/jobs/compact"
)

// TestJobsCompactSortBy: `jobs compact --sort-by TOPIC=COL,COL` writes
// that topic's rows in key order (nulls first, ties in offset order) and
// another topic's in input order; bad values fail before any work with a
// one-line error naming the flag.
func TestJobsCompactSortBy(t *testing.T) {
	const sch = `{"type": "record", "name": "V", "fields": [
	  {"name": "user", "type": ["null", "string"]}, {"name": "n", "type": "long"}]}`
	codec, err := goavro.NewCodec(sch)
	if err != nil {
		t.Fatal(err)
	}
	fsys, base := filesys.Local(), t.TempDir()
	hour := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	users := []any{goavro.Union("string", "c"), nil, goavro.Union("string", "a"), goavro.Union("string", "c"), goavro.Union("string", "b"), nil}
	for _, topic := range []string{"views", "clicks"} {
		var recs []any
		for i, u := range users {
			recs = append(recs, map[string]any{"user": u, "n": int64(i)})
		}
		var buf bytes.Buffer
		w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: goavro.CompressionDeflateLabel})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
		name := hours.LoaderFile{Topic: topic, Partition: 0, First: 0, Last: int64(len(recs) - 1), SchemaID: 1, Format: hours.Avro}.Name()
		if err := filesys.WriteFile(fsys, path.Join(hours.Dir(base, topic, hour), name), buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	closed := hour.Add(2 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct{ flag, want string }{
		{"views", `--sort-by: compact: invalid configuration: sort key "views": want TOPIC=COL[,COL...]`},
		{"views=", `want TOPIC=COL[,COL...]`},
		{"views=user name", `--sort-by: compact: invalid configuration: sort key of topic "views": column "user name" is not a field name`},
		{"views=n,n", `column "n" given twice`},
	} {
		res := runCLI(t, 30*time.Second, "", "jobs", "compact", "--base", base, "--closed-through", closed, "--log-level", "error", "--sort-by", c.flag)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) || strings.Contains(res.err.Error(), "\n") || res.stdout != "" {
			t.Errorf("--sort-by %q: error %v, stdout %q: want one line with %q and no output", c.flag, res.err, res.stdout, c.want)
		}
	}
	res := runCLI(t, 30*time.Second, "", "jobs", "compact", "--base", base, "--closed-through", closed, "--log-level", "error",
		"--sort-by", "views=user,n", "--sort-by", "orders=id")
	if res.err != nil {
		t.Fatalf("jobs compact --sort-by: %v\n%s", res.err, res.stderr)
	}
	var sum compact.Summary
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.stdout)), &sum); err != nil {
		t.Fatalf("summary %q: %v", res.stdout, err)
	}
	if sum.HoursCompacted != 2 || sum.SortedRuns != 1 {
		t.Errorf("summary %+v: want 2 hours compacted, 1 of them (views) sorted", sum)
	}
	order := func(topic string) []int64 {
		files, err := hours.TopicData(fsys, base, topic)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int64
		for _, d := range files {
			if d.Format != hours.Parquet {
				t.Fatalf("%s is not Parquet", d.Path())
			}
			if _, err := rows.Read(fsys, d, func(rec map[string]any) error { ns = append(ns, rec["n"].(int64)); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return ns
	}
	// Nulls (1, 5), then a (2), b (4), c (0, 3).
	if got, want := order("views"), []int64{1, 5, 2, 4, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("views rows by n: %v, want %v (sorted by user, n)", got, want)
	}
	if got, want := order("clicks"), []int64{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("clicks rows by n: %v, want the input order %v", got, want)
	}
}

// TestJobsCompactTimestampType: --parquet-timestamp-type INT64 compacts
// (package rows reads the instants back); a bad value, and INT64 with a
// --tables-config that registers Hive tables, fail before any work (no
// metastore is dialled, no hour marked) with one line naming the flag.
func TestJobsCompactTimestampType(t *testing.T) {
	const sch = `{"type": "record", "name": "V", "fields": [{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}`
	codec, err := goavro.NewCodec(sch)
	if err != nil {
		t.Fatal(err)
	}
	fsys, base := filesys.Local(), t.TempDir()
	hour := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	instants := []time.Time{time.Date(1901, 1, 1, 0, 0, 0, 5e6, time.UTC), hour.Add(time.Minute), time.Date(2100, 6, 1, 0, 0, 0, 0, time.UTC)}
	var recs []any
	for _, ts := range instants {
		recs = append(recs, map[string]any{"ts": ts})
	}
	var buf bytes.Buffer
	w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(recs); err != nil {
		t.Fatal(err)
	}
	dir := hours.Dir(base, "views", hour)
	name := hours.LoaderFile{Topic: "views", Partition: 0, First: 0, Last: int64(len(recs) - 1), SchemaID: 1, Format: hours.Avro}.Name()
	if err := filesys.WriteFile(fsys, path.Join(dir, name), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	props := func(integration bool) string {
		p := path.Join(t.TempDir(), "tables.properties")
		// A metastore nobody listens on: the refusal must come first.
		body := fmt.Sprintf("hive.integration=%v\nhive.metastore.uris=thrift://127.0.0.1:1\nschema.registry.url=http://127.0.0.1:1\n", integration)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hive := props(true)
	closed := hour.Add(2 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--parquet-timestamp-type", "INT32"}, `--parquet-timestamp-type "INT32": want INT96 or INT64`},
		{[]string{"--parquet-timestamp-type", ""}, `--parquet-timestamp-type "": want INT96 or INT64`},
		{[]string{"--parquet-timestamp-type", "INT64", "--tables-config", hive},
			"--parquet-timestamp-type INT64 with --tables-config " + hive + " (hive.integration=true): Spark reads a Hive table's Parquet partitions through Hive 2.3's Parquet reader, which reads timestamps only from INT96"},
	} {
		args := append([]string{"jobs", "compact", "--base", base, "--closed-through", closed, "--log-level", "error"}, c.args...)
		res := runCLI(t, 30*time.Second, "", args...)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) || strings.Contains(res.err.Error(), "\n") || res.stdout != "" {
			t.Errorf("%q: error %v, stdout %q: want one line with %q and no output", c.args, res.err, res.stdout, c.want)
		}
		if ok, err := filesys.Exists(fsys, path.Join(dir, hours.SuccessMarker)); err != nil || ok {
			t.Fatalf("%q: _SUCCESS written (%v, %v): the refusal came after work", c.args, ok, err)
		}
	}
	// hive.integration=false registers nothing: INT64 is fine.
	res := runCLI(t, 30*time.Second, "", "jobs", "compact", "--base", base, "--closed-through", closed, "--log-level", "error",
		"--parquet-timestamp-type", "INT64", "--tables-config", props(false))
	if res.err != nil {
		t.Fatalf("jobs compact --parquet-timestamp-type INT64: %v\n%s", res.err, res.stderr)
	}
	files, err := hours.TopicData(fsys, base, "views")
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	for _, d := range files {
		if d.Format != hours.Parquet {
			t.Fatalf("%s is not Parquet", d.Path())
		}
		if _, err := rows.Read(fsys, d, func(rec map[string]any) error { got = append(got, rec["ts"].(time.Time)); return nil }); err != nil {
			t.Fatal(err)
		}
		b, err := filesys.ReadFile(fsys, d.Path())
		if err != nil {
			t.Fatal(err)
		}
		src, err := buffer.NewBufferFile(b)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := reader.NewParquetReader(src, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		el := pr.SchemaHandler.SchemaElements[1]
		pr.ReadStop()
		if el.GetType() != parquet.Type_INT64 || el.LogicalType.GetTIMESTAMP() == nil || el.LogicalType.GetTIMESTAMP().Unit.MILLIS == nil {
			t.Errorf("%s: ts is %v, want INT64 TIMESTAMP(MILLIS)", d.Path(), el)
		}
	}
	if !slices.EqualFunc(got, instants, time.Time.Equal) {
		t.Errorf("rows read %v, want %v", got, instants)
	}
}
