package compact

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/pipeline/pageview"
)

// The size tests compact realistic hours and hold the result to a bound
// on Parquet bytes over the loader's deflate Avro bytes, every row still
// read back equal by pyarrow. Page views meet the goal of half (0.438);
// the wide record carries about 24 bytes a row of randomness (a 64-bit
// request id, latencies, byte counts, 5,000 users in 30,000 rows) that no
// encoding removes, so it is held to what the encodings reach: 0.521 with
// zstd, every column's encoding chosen by trial (0.567 before, with
// parquet-go's default zstd level and its request id PLAIN). The rest of
// the way to half is not in Parquet's encodings: its decimal-fraction
// doubles (latency and upstream) take 208 KB an hour against about 100 KB
// of entropy (BYTE_STREAM_SPLIT is worse), and only sorting by user_id
// (0.498, Config.SortBy; see doc.go) gets below it.
//
// Sorted by user_id (Config.SortBy), the wide record's session, account
// and shard columns, which follow the user, come in runs, and it reaches
// half: maxWideSortedRatio.
//
// Since timestamp-millis is INT96 (doc.go: what Hive's Parquet reader up
// to 3.1 reads), a timestamp costs about 4 bytes a row compressed against
// about 1 as DELTA_BINARY_PACKED INT64: the page views, whose timestamp is
// most of a row's entropy, went from 0.438x to 0.752x, the request log
// from 0.521x to 0.560x (sorted: 0.498x to 0.538x).
//
// With Config.TimestampType INT64 (native readers only) the page views
// come out at 0.461x and the request log at 0.525x (0.438x and 0.521x
// were measured before INT96 and the parquet.avro.schema footer came in):
// maxPageViewRatioINT64 and maxWideRatioINT64.
const (
	maxPageViewRatio      = 0.77
	maxWideRatio          = 0.57
	maxWideSortedRatio    = 0.55
	maxPageViewRatioINT64 = 0.48
	maxWideRatioINT64     = 0.54
)

// loaderBlockBytes is the loader's uncompressed Avro block size
// (loader.blockBytes): the inputs are built the way the loader writes them.
const loaderBlockBytes = 256 << 10

// sizeSample is one synthetic topic: its schema and a generator of the
// records of each hour, each with its partition.
type sizeSample struct {
	topic, schema string
	hours         int
	// gen returns the records of hour h, in partition and offset order.
	gen func(h int, start time.Time) []partRecord
	// key, if set, names the sample's records (generator and size) so
	// that writeSample encodes them once per test binary (sampleCache).
	key string
}

// sampleCache holds the Avro files of the keyed samples: the generators
// are seeded, so a sample's files hold the same records every time, and
// encoding the request log's 60,000 rows with goavro takes 10 to 20 s
// under the race detector on a busy machine (four size tests write it).
var sampleCache struct {
	sync.Mutex
	files map[string][]sampleFile
}

// sampleFile is one Avro file of a sample: its hour and its name there.
type sampleFile struct {
	hour int
	name string
	data []byte
}

type partRecord struct {
	partition int
	rec       map[string]any
}

// pageViewSample is the pipeline's page views from two datacenters' two
// producers each at about 1 view/s per producer, keyed by user over six
// partitions like the pipeline's producer does.
func pageViewSample(perHour int) sizeSample {
	producers := []struct{ dc, id string }{{"dc1", "dc1-1f2e3d4c"}, {"dc1", "dc1-99aa0b1c"}, {"dc2", "dc2-5e6f7a8b"}, {"dc2", "dc2-0c0d0e0f"}}
	return sizeSample{topic: "pageviews", schema: pageview.Schema, hours: 3, key: fmt.Sprint("pageviews/", perHour), gen: func(h int, start time.Time) []partRecord {
		rng := rand.New(rand.NewPCG(uint64(h), 1))
		byPart := make([][]partRecord, 6)
		per := perHour / len(producers)
		step := time.Hour / time.Duration(per)
		for _, p := range producers {
			for i := 0; i < per; i++ {
				seq := int64(h*per + i)
				ts := start.Add(time.Duration(i)*step + time.Duration(rng.IntN(int(step/time.Millisecond)))*time.Millisecond)
				ev := pageview.Event(p.dc, p.id, seq, ts)
				f := fnv.New32a()
				f.Write([]byte(ev["user"].(string)))
				part := int(f.Sum32() % 6)
				byPart[part] = append(byPart[part], partRecord{part, ev})
			}
		}
		var out []partRecord
		for _, recs := range byPart {
			// A partition's records are in the order the broker appended
			// them: by timestamp.
			sortByTimestamp(recs, "timestamp")
			out = append(out, recs...)
		}
		return out
	}}
}

// wideSchema is a 30-field record of mixed types, like a service's request
// log.
const wideSchema = `{
 "type": "record", "name": "Request", "namespace": "com.example",
 "fields": [
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "received", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "request_id", "type": "string"},
  {"name": "session", "type": "string"},
  {"name": "user_id", "type": "long"},
  {"name": "account", "type": ["null", "string"], "default": null},
  {"name": "host", "type": "string"},
  {"name": "service", "type": "string"},
  {"name": "method", "type": {"type": "enum", "name": "Method", "symbols": ["GET", "POST", "PUT", "DELETE"]}},
  {"name": "path", "type": "string"},
  {"name": "status", "type": "int"},
  {"name": "latency_ms", "type": "double"},
  {"name": "upstream_ms", "type": ["null", "double"], "default": null},
  {"name": "bytes_in", "type": "long"},
  {"name": "bytes_out", "type": "long"},
  {"name": "cache_hit", "type": "boolean"},
  {"name": "retries", "type": "int"},
  {"name": "country", "type": "string"},
  {"name": "region", "type": ["null", "string"], "default": null},
  {"name": "user_agent", "type": "string"},
  {"name": "client_version", "type": "string"},
  {"name": "experiment", "type": ["null", "string"], "default": null},
  {"name": "score", "type": "float"},
  {"name": "sampled", "type": "boolean"},
  {"name": "shard", "type": "int"},
  {"name": "trace_flags", "type": "int"},
  {"name": "error", "type": ["null", "string"], "default": null},
  {"name": "referrer", "type": ["null", "string"], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}}
 ]}`

func wideSample(perHour int) sizeSample {
	hosts := []string{"web-01.dc1", "web-02.dc1", "web-03.dc1", "web-04.dc2", "web-05.dc2"}
	services := []string{"feed", "profile", "search", "messages", "jobs", "ads"}
	methods := []string{"GET", "GET", "GET", "POST", "PUT", "DELETE"}
	countries := []string{"US", "US", "US", "IN", "BR", "DE", "GB", "FR", "JP", "CA"}
	agents := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36",
		"okhttp/4.12.0",
	}
	return sizeSample{topic: "requests", schema: wideSchema, hours: 2, key: fmt.Sprint("requests/", perHour), gen: func(h int, start time.Time) []partRecord {
		rng := rand.New(rand.NewPCG(uint64(h), 2))
		byPart := make([][]partRecord, 4)
		step := time.Hour / time.Duration(perHour)
		for i := 0; i < perHour; i++ {
			ts := start.Add(time.Duration(i)*step + time.Duration(rng.IntN(200))*time.Millisecond).UTC().Truncate(time.Millisecond)
			user := int64(rng.IntN(5000)) + 100000
			svc := services[rng.IntN(len(services))]
			status := int32(200)
			var errMsg any
			switch r := rng.IntN(100); {
			case r < 3:
				status = 500
				errMsg = goavro.Union("string", "upstream timeout after 3 retries")
			case r < 8:
				status = 404
			case r < 10:
				status = 302
			}
			var account, region, experiment, referrer, upstream any
			if rng.IntN(4) > 0 {
				account = goavro.Union("string", fmt.Sprintf("acct-%05d", user%3000))
			}
			if rng.IntN(2) == 0 {
				region = goavro.Union("string", []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"}[rng.IntN(4)])
			}
			if rng.IntN(10) == 0 {
				experiment = goavro.Union("string", fmt.Sprintf("exp-%d-%s", rng.IntN(12), []string{"control", "treatment"}[rng.IntN(2)]))
			}
			if rng.IntN(3) == 0 {
				referrer = goavro.Union("string", "https://www.example.com/"+services[rng.IntN(len(services))]+"?ref="+fmt.Sprint(rng.IntN(50)))
			}
			latency := float64(rng.IntN(250000)) / 1000
			if rng.IntN(2) == 0 {
				upstream = goavro.Union("double", latency*0.8)
			}
			tags := []any{}
			for range rng.IntN(3) {
				tags = append(tags, []string{"mobile", "beta", "internal", "bot", "vip"}[rng.IntN(5)])
			}
			rec := map[string]any{
				"ts":             ts,
				"received":       ts.Add(time.Duration(rng.IntN(5000)) * time.Microsecond),
				"day":            start.Truncate(24 * time.Hour),
				"request_id":     fmt.Sprintf("%016x", rng.Uint64()),
				"session":        fmt.Sprintf("s-%08x", uint32(user*2654435761)),
				"user_id":        user,
				"account":        account,
				"host":           hosts[rng.IntN(len(hosts))],
				"service":        svc,
				"method":         methods[rng.IntN(len(methods))],
				"path":           "/" + svc + "/" + []string{"list", "get", "update", "view"}[rng.IntN(4)],
				"status":         status,
				"latency_ms":     latency,
				"upstream_ms":    upstream,
				"bytes_in":       int64(rng.IntN(2000)),
				"bytes_out":      int64(rng.IntN(64000)),
				"cache_hit":      rng.IntN(3) == 0,
				"retries":        int32(rng.IntN(10) / 8),
				"country":        countries[rng.IntN(len(countries))],
				"region":         region,
				"user_agent":     agents[rng.IntN(len(agents))],
				"client_version": fmt.Sprintf("5.%d.%d", rng.IntN(3), rng.IntN(10)),
				"experiment":     experiment,
				"score":          float32(rng.IntN(1000)) / 100,
				"sampled":        rng.IntN(100) == 0,
				"shard":          int32(user % 64),
				"trace_flags":    int32(rng.IntN(2)),
				"error":          errMsg,
				"referrer":       referrer,
				"tags":           tags,
			}
			p := int(user % 4)
			byPart[p] = append(byPart[p], partRecord{p, rec})
		}
		var out []partRecord
		for _, recs := range byPart {
			out = append(out, recs...)
		}
		return out
	}}
}

func sortByTimestamp(recs []partRecord, field string) {
	sort.SliceStable(recs, func(i, j int) bool {
		return recs[i].rec[field].(time.Time).Before(recs[j].rec[field].(time.Time))
	})
}

// writeSample writes the sample's hours under base the way the loader does
// (one deflate Avro file per partition and hour, blocks of about
// loaderBlockBytes) and returns the hours' directories.
func writeSample(t testing.TB, fsys filesys.FS, base string, s sizeSample) []string {
	t.Helper()
	var dirs []string
	for h := 0; h < s.hours; h++ {
		dirs = append(dirs, hours.Dir(base, s.topic, hour0.Add(time.Duration(h)*time.Hour)))
	}
	for _, f := range encodeSampleOnce(t, s) {
		if err := filesys.WriteFile(fsys, path.Join(dirs[f.hour], f.name), f.data); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// encodeSampleOnce returns encodeSample's files, from sampleCache for a
// keyed sample encoded before.
func encodeSampleOnce(t testing.TB, s sizeSample) []sampleFile {
	t.Helper()
	if s.key == "" {
		return encodeSample(t, s)
	}
	sampleCache.Lock()
	defer sampleCache.Unlock()
	if f, ok := sampleCache.files[s.key]; ok {
		return f
	}
	f := encodeSample(t, s)
	if sampleCache.files == nil {
		sampleCache.files = map[string][]sampleFile{}
	}
	sampleCache.files[s.key] = f
	return f
}

// encodeSample encodes the sample's hours as the loader's Avro files.
func encodeSample(t testing.TB, s sizeSample) []sampleFile {
	t.Helper()
	codec, err := goavro.NewCodec(s.schema)
	if err != nil {
		t.Fatal(err)
	}
	var files []sampleFile
	for h := 0; h < s.hours; h++ {
		recs := s.gen(h, hour0.Add(time.Duration(h)*time.Hour))
		for i := 0; i < len(recs); {
			part := recs[i].partition
			var buf bytes.Buffer
			w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: goavro.CompressionDeflateLabel})
			if err != nil {
				t.Fatal(err)
			}
			var block []any
			blockSize, first, n := 0, int64(h*1_000_000), int64(0)
			for ; i < len(recs) && recs[i].partition == part; i++ {
				b, err := codec.BinaryFromNative(nil, recs[i].rec)
				if err != nil {
					t.Fatal(err)
				}
				block, blockSize, n = append(block, recs[i].rec), blockSize+len(b), n+1
				if blockSize >= loaderBlockBytes {
					if err := w.Append(block); err != nil {
						t.Fatal(err)
					}
					block, blockSize = nil, 0
				}
			}
			if len(block) > 0 {
				if err := w.Append(block); err != nil {
					t.Fatal(err)
				}
			}
			name := hours.LoaderFile{Topic: s.topic, Partition: int32(part), First: first, Last: first + n - 1, SchemaID: 3, Format: hours.Avro}.Name()
			files = append(files, sampleFile{hour: h, name: name, data: buf.Bytes()})
		}
	}
	return files
}

// compactSample compacts the sample with codec, sorted by sortBy if given,
// and returns Parquet/Avro bytes; with compare it checks every row with
// pyarrow against fastavro (as multisets when sorted, each file's rows
// then also in sortBy order).
func compactSample(t testing.TB, s sizeSample, codec string, compare bool, sortBy ...string) (avroBytes, parquetBytes int64) {
	t.Helper()
	return compactSampleAs(t, s, codec, "", compare, sortBy...)
}

// compactSampleAs is compactSample with timestamp-millis as tsType
// (Config.TimestampType).
func compactSampleAs(t testing.TB, s sizeSample, codec, tsType string, compare bool, sortBy ...string) (avroBytes, parquetBytes int64) {
	t.Helper()
	fsys, base := filesys.Local(), t.TempDir()
	dirs := writeSample(t, fsys, base, s)
	local := t.TempDir()
	orig := map[string][]string{}
	for i, d := range dirs {
		names, err := hours.DataFiles(fsys, d)
		if err != nil {
			t.Fatal(err)
		}
		orig[d] = copyOut(t, fsys, d, names, filepath.Join(local, "orig", fmt.Sprint(i)))
	}
	cfg := Config{FS: fsys, Base: base, Codec: codec, TimestampType: tsType,
		ClosedThrough: func(context.Context) (time.Time, error) { return hour0.Add(24 * time.Hour), nil }}
	if len(sortBy) > 0 {
		cfg.SortBy = map[string][]string{s.topic: sortBy}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.HoursCompacted != s.hours {
		t.Fatalf("summary %+v: want %d hours compacted", sum, s.hours)
	}
	// Each hour fits the default sort buffer: one run, each file sorted.
	wantRuns := 0
	if len(sortBy) > 0 {
		wantRuns = s.hours
	}
	if sum.SortedRuns != wantRuns {
		t.Errorf("%d sorted runs, want %d (sort by %v)", sum.SortedRuns, wantRuns, sortBy)
	}
	if compare {
		checks := map[string]check{}
		for i, d := range dirs {
			names := compactedFiles(t, fsys, d)
			checks[fmt.Sprintf("%s-hour%d", s.topic, i)] = check{Avro: orig[d], Parquet: copyOut(t, fsys, d, names, filepath.Join(local, "pq", fmt.Sprint(i))),
				Unordered: len(sortBy) > 0, SortedBy: sortBy}
		}
		t.Logf("pyarrow vs fastavro: %v", comparePython(t, checks))
	}
	return sum.BytesIn, sum.BytesOut
}

// TestCompactionCompresses: page views and a wide record come out of
// compaction within their bound of their deflate Avro with the default
// codec, and pyarrow reads every row back equal; snappy's figure is logged
// beside it.
//
// It and the other two size tests of the full samples (each 30 to 80 s of
// compaction and a pyarrow comparison under the race detector on a busy
// machine) are parallel tests: they take the crashParallel slots beside
// the crash tests, which mostly wait on child processes and NameNodes,
// instead of running before them. Their figures do not depend on time.
func TestCompactionCompresses(t *testing.T) {
	t.Parallel() // beside the crash tests, which mostly wait
	for _, c := range []struct {
		s     sizeSample
		bound float64
	}{{pageViewSample(8000), maxPageViewRatio}, {wideSample(30000), maxWideRatio}} {
		t.Run(c.s.topic, func(t *testing.T) {
			in, out := compactSample(t, c.s, DefaultCodec, true)
			ratio := float64(out) / float64(in)
			t.Logf("%s, %d hours: Avro (deflate) %d bytes -> Parquet (%s) %d bytes: %.3fx", c.s.topic, c.s.hours, in, DefaultCodec, out, ratio)
			if ratio > c.bound {
				t.Errorf("Parquet/Avro = %.3f, want <= %.2f", ratio, c.bound)
			}
			in, out = compactSample(t, c.s, "snappy", false)
			t.Logf("%s with snappy: %d -> %d bytes: %.3fx", c.s.topic, in, out, float64(out)/float64(in))
		})
	}
}

// TestCompactionCompressesINT64: with timestamp-millis as delta-encoded
// INT64 (Config.TimestampType, for native readers) page views and the
// wide record come back within INT64's bounds, pyarrow reading every row
// back equal.
func TestCompactionCompressesINT64(t *testing.T) {
	t.Parallel() // beside the crash tests (see TestCompactionCompresses)
	for _, c := range []struct {
		s     sizeSample
		bound float64
	}{{pageViewSample(8000), maxPageViewRatioINT64}, {wideSample(30000), maxWideRatioINT64}} {
		t.Run(c.s.topic, func(t *testing.T) {
			in, out := compactSampleAs(t, c.s, DefaultCodec, TimestampINT64, true)
			ratio := float64(out) / float64(in)
			t.Logf("%s, %d hours, timestamps INT64: Avro (deflate) %d bytes -> Parquet (%s) %d bytes: %.3fx", c.s.topic, c.s.hours, in, DefaultCodec, out, ratio)
			if ratio > c.bound {
				t.Errorf("Parquet/Avro = %.3f, want <= %.2f", ratio, c.bound)
			}
		})
	}
}

// TestCompactionSortedCompresses: the wide record sorted by user_id comes
// out within maxWideSortedRatio of its deflate Avro, pyarrow reading every
// row back (as a multiset) and each file's rows in user_id order; page
// views sorted by user (larger: no bound) and a key of several columns,
// the first nullable (nulls first), are checked the same way.
func TestCompactionSortedCompresses(t *testing.T) {
	t.Parallel() // beside the crash tests (see TestCompactionCompresses)
	t.Run("requests", func(t *testing.T) {
		in, out := compactSample(t, wideSample(30000), DefaultCodec, true, "user_id")
		ratio := float64(out) / float64(in)
		t.Logf("requests sorted by user_id: Avro (deflate) %d bytes -> Parquet (%s) %d bytes: %.3fx", in, DefaultCodec, out, ratio)
		if ratio > maxWideSortedRatio {
			t.Errorf("Parquet/Avro = %.3f, want <= %.2f", ratio, maxWideSortedRatio)
		}
	})
	t.Run("pageviews", func(t *testing.T) {
		in, out := compactSample(t, pageViewSample(8000), DefaultCodec, true, "user")
		// No gain here: the user decides no other column, and sorting
		// scatters the timestamps' and sequence numbers' deltas.
		t.Logf("pageviews sorted by user: %d -> %d bytes: %.3fx (unsorted: 0.752x)", in, out, float64(out)/float64(in))
	})
	t.Run("nulls-first", func(t *testing.T) {
		compactSample(t, wideSample(3000), DefaultCodec, true, "region", "method", "ts")
	})
}
