package compact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// testSchema covers what the mapping must handle: primitives, nullable
// unions, a multi-branch union, records, arrays, maps, enums, fixed and
// the logical types.
const testSchema = `{
 "type": "record", "name": "PageView", "namespace": "com.example",
 "fields": [
  {"name": "user", "type": "string"},
  {"name": "seq", "type": "long"},
  {"name": "count", "type": "int"},
  {"name": "score", "type": "double"},
  {"name": "ratio", "type": "float"},
  {"name": "ok", "type": "boolean"},
  {"name": "referrer", "type": ["null", "string"], "default": null},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "ts_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "attrs", "type": {"type": "map", "values": "long"}},
  {"name": "device", "type": {"type": "record", "name": "Device", "fields": [
     {"name": "os", "type": {"type": "enum", "name": "OS", "symbols": ["LINUX", "IOS", "ANDROID"]}},
     {"name": "id", "type": {"type": "fixed", "name": "DeviceID", "size": 4}}]}},
  {"name": "prev", "type": ["null", "Device"], "default": null},
  {"name": "clicks", "type": {"type": "array", "items": {"type": "record", "name": "Click", "fields": [
     {"name": "x", "type": "int"}, {"name": "label", "type": ["null", "string"]}]}}},
  {"name": "extra", "type": ["null", "string", "long"], "default": null},
  {"name": "payload", "type": "bytes"},
  {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
  {"name": "series", "type": {"type": "map", "values": {"type": "array", "items": ["null", "long"]}}}
 ]}`

// testRecord builds row i of hour h in goavro's native form.
func testRecord(h, i int, hourStart time.Time) map[string]any {
	n := h*1000 + i
	rec := map[string]any{
		"user":     fmt.Sprintf("user-%d", n%37),
		"seq":      int64(n),
		"count":    int32(i % 5),
		"score":    float64(n) / 8,
		"ratio":    float32(i) / 4,
		"ok":       i%3 == 0,
		"referrer": nil,
		"ts":       hourStart.Add(time.Duration(i) * time.Second).UTC(),
		"ts_us":    nil,
		"day":      hourStart.Truncate(24 * time.Hour),
		"price":    big.NewRat(int64(n*7-500), 100),
		"tags":     []any{},
		"attrs":    map[string]any{},
		"device":   map[string]any{"os": []string{"LINUX", "IOS", "ANDROID"}[i%3], "id": []byte{byte(i), 1, 2, byte(h)}},
		"prev":     nil,
		"clicks":   []any{},
		"extra":    nil,
		"payload":  []byte(fmt.Sprintf("p%d", n)),
		"at":       time.Duration(n%86400) * time.Second,
		"series":   map[string]any{"a": []any{goavro.Union("long", int64(n)), nil}, "b": []any{}},
	}
	if i%2 == 0 {
		rec["referrer"] = goavro.Union("string", fmt.Sprintf("https://ref/%d", i))
		rec["ts_us"] = goavro.Union("long.timestamp-micros", hourStart.Add(time.Duration(i)*time.Microsecond).UTC())
		rec["tags"] = []any{"a", fmt.Sprintf("t%d", i)}
		rec["attrs"] = map[string]any{"k1": int64(i), "k2": int64(-i)}
		rec["clicks"] = []any{map[string]any{"x": int32(i), "label": goavro.Union("string", "l")}, map[string]any{"x": int32(-1), "label": nil}}
		rec["extra"] = goavro.Union("long", int64(i*i))
	} else if i%3 == 1 {
		rec["prev"] = goavro.Union("com.example.Device", map[string]any{"os": "IOS", "id": []byte{9, 9, 9, byte(i)}})
		rec["extra"] = goavro.Union("string", "s")
	}
	return rec
}

// writeHours writes nHours hours of topic under base, each with files
// Avro files of perFile records (two partitions), in the loader's layout.
// It returns the hours' directories.
func writeHours(t testing.TB, fsys filesys.FS, base, topic string, start time.Time, nHours, files, perFile int) []string {
	t.Helper()
	codec, err := goavro.NewCodec(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for h := 0; h < nHours; h++ {
		hs := start.Add(time.Duration(h) * time.Hour)
		dir := hours.Dir(base, topic, hs)
		dirs = append(dirs, dir)
		i := 0
		for f := 0; f < files; f++ {
			var buf bytes.Buffer
			w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: goavro.CompressionDeflateLabel})
			if err != nil {
				t.Fatal(err)
			}
			var recs []any
			for k := 0; k < perFile; k++ {
				recs = append(recs, testRecord(h, i, hs))
				i++
			}
			if err := w.Append(recs); err != nil {
				t.Fatal(err)
			}
			p := f % 2
			first := int64(h*10000 + f*perFile)
			name := hours.LoaderFile{Topic: topic, Partition: int32(p), First: first, Last: first + int64(perFile) - 1, SchemaID: 7, Format: hours.Avro}.Name()
			if err := filesys.WriteFile(fsys, path.Join(dir, name), buf.Bytes()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dirs
}

// closedAll is a ClosedThrough that closes every hour of the tests.
func closedAll(context.Context) (time.Time, error) { return hour0.Add(24 * time.Hour), nil }

// writeLoaderCommit writes a loader manifest so that loader.CommittedThrough
// of job reports watermark (one partition of topic).
func writeLoaderCommit(t testing.TB, fsys filesys.FS, base, job, topic string, watermark time.Time) {
	t.Helper()
	m := map[string]any{"version": 1, "job": job, "topic": topic, "partition": 0, "seq": 1,
		"committed_at": time.Now().UTC(), "first_offset": 0, "next_offset": 1,
		"max_timestamp_ms": watermark.UnixMilli(), "watermark_ms": watermark.UnixMilli(), "moves": []any{}}
	b, _ := json.Marshal(m)
	name := path.Join(base, "_loader", job, topic, "0", "manifests", fmt.Sprintf("%020d.json", 1))
	_ = fsys.Remove(name)
	if err := filesys.WriteFile(fsys, name, b); err != nil {
		t.Fatal(err)
	}
}

// compactedFiles returns the data files of the compacted hour dir and fails
// t for any that is not Parquet.
func compactedFiles(t testing.TB, fsys filesys.FS, dir string) []string {
	t.Helper()
	names, err := hours.DataFiles(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".parquet") {
			t.Errorf("%s still shows %s after compaction", dir, n)
		}
	}
	return names
}

// copyOut copies files of fsys into a local directory and returns the local paths.
func copyOut(t testing.TB, fsys filesys.FS, dir string, names []string, dst string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		b, err := filesys.ReadFile(fsys, path.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		// The base name: a generation's files are named ../<HH>.c<N>/... from the hour.
		p := filepath.Join(dst, path.Base(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// compareScript reads each check's Avro files with fastavro and Parquet
// files with pyarrow, normalises both to JSON values and reports whether
// the rows (in order, or as multisets for an unordered check) are equal,
// and, for a check with sorted_by, whether each Parquet file's rows are in
// non-decreasing order of those columns (nulls first).
const compareScript = `
import json, sys, datetime, decimal, base64
import fastavro, pyarrow.parquet as pq

def norm(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.astimezone(datetime.timezone.utc).isoformat()
    if isinstance(v, datetime.time):
        # time-millis: Parquet holds the millisecond of the day, unannotated (doc.go)
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        # a multi-branch union as Parquet stores it: {member0: .., member1: ..}
        if v and all(k.startswith("member") for k in v):
            vals = [x for x in v.values() if x is not None]
            return norm(vals[0]) if vals else None
        return {k: norm(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return v

def avro_rows(paths):
    rows = []
    for p in paths:
        with open(p, "rb") as f:
            rows.extend(fastavro.reader(f))
    return rows

def parquet_rows(paths):
    rows = []
    for p in paths:
        rows.extend(pq.read_table(p).to_pylist(maps_as_pydicts="strict"))
    return rows

def unsorted(paths, cols):
    for p in paths:
        rows = pq.read_table(p).to_pylist()
        keys = [tuple((r[c] is not None, r[c]) for c in cols) for r in rows]
        for i in range(1, len(keys)):
            if keys[i] < keys[i - 1]:
                return "UNSORTED: %s row %d %s after %s" % (p, i, keys[i], keys[i - 1])
    return None

checks = json.load(open(sys.argv[1]))
out = {}
for name, c in checks.items():
    a = [norm(r) for r in avro_rows(c["avro"])]
    p = [norm(r) for r in parquet_rows(c["parquet"])]
    if c.get("unordered"):
        a.sort(key=lambda r: json.dumps(r, sort_keys=True))
        p.sort(key=lambda r: json.dumps(r, sort_keys=True))
    bad = unsorted(c["parquet"], c["sorted_by"]) if c.get("sorted_by") else None
    if bad:
        out[name] = bad
    elif a == p:
        out[name] = "equal %d" % len(a)
    else:
        diff = next((i for i in range(min(len(a), len(p))) if a[i] != p[i]), None)
        out[name] = "DIFFERENT: %d avro rows, %d parquet rows; first difference at %s: %s vs %s" % (
            len(a), len(p), diff, json.dumps(a[diff] if diff is not None else None), json.dumps(p[diff] if diff is not None else None))
print(json.dumps(out))
`

type check struct {
	Avro    []string `json:"avro"`
	Parquet []string `json:"parquet"`
	// Unordered compares the rows as multisets (a sorted topic's files).
	Unordered bool `json:"unordered,omitempty"`
	// SortedBy, if set, also requires each Parquet file's rows in
	// non-decreasing order of these columns, nulls first.
	SortedBy []string `json:"sorted_by,omitempty"`
}

// comparePython runs compareScript over checks and fails t for any that
// differ. Checks whose files have the same bytes (the crash tests see the
// same generation at many crash points) are compared once.
func comparePython(t testing.TB, checks map[string]check) map[string]string {
	t.Helper()
	digest := func(paths []string) string {
		h := sha256.New()
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%d:", len(b))
			h.Write(b)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	rep := map[string]string{} // content key -> the check compared for it
	keyOf := map[string]string{}
	for name, c := range checks {
		key := digest(c.Avro) + "/" + digest(c.Parquet) + fmt.Sprint("/", c.Unordered, c.SortedBy)
		keyOf[name] = key
		if r, ok := rep[key]; !ok || name < r {
			rep[key] = name
		}
	}
	unique := map[string]check{}
	for _, name := range rep {
		unique[name] = checks[name]
	}
	t.Logf("%d checks, %d of distinct contents compared", len(checks), len(unique))
	got := compareUnique(t, unique)
	res := map[string]string{}
	for name := range checks {
		res[name] = got[rep[keyOf[name]]]
	}
	return res
}

// compareUnique runs compareScript over checks and fails t for any that differ.
func compareUnique(t testing.TB, checks map[string]check) map[string]string {
	t.Helper()
	py := testenv.Python(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "compare.py")
	in := filepath.Join(dir, "checks.json")
	b, _ := json.Marshal(checks)
	if err := os.WriteFile(script, []byte(compareScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, in).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python compare: %v\n%s", err, stderr)
	}
	var res map[string]string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	for name, r := range res {
		if !strings.HasPrefix(r, "equal ") {
			t.Errorf("%s: %s", name, r)
		}
	}
	return res
}
