package loader_test

import (
	"context"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/loader"
	"github.com/tributary/tributary/schema"
	"github.com/tributary/tributary/schema/avro"
)

const benchSchema = `{"type":"record","name":"View","namespace":"bench","fields":[
 {"name":"id","type":"long"},{"name":"member","type":"long"},{"name":"page","type":"string"},
 {"name":"agent","type":"string"},{"name":"referrer","type":["null","string"],"default":null},
 {"name":"durationMs","type":"int"}]}`

type benchData struct {
	c        *cluster
	topic    string
	payloads [][]byte
	bytes    int64
}

var (
	benchOnce sync.Once
	benchSet  *benchData
)

const benchRecords = 200_000

// benchSetup produces benchRecords records (~150 bytes each) into 6
// partitions over 3 hours once per test binary.
func benchSetup(b *testing.B) *benchData {
	benchOnce.Do(func() {
		c := newCluster(b)
		d := &benchData{c: c, topic: "bench"}
		c.CreateTopic(b, d.topic, 6)
		start := hourStart()
		recs := make([]*kgo.Record, 0, benchRecords)
		for i := range benchRecords {
			var ref any
			if i%3 == 0 {
				ref = map[string]any{"string": fmt.Sprintf("https://www.example.com/search?q=term%d", i%1000)}
			}
			v, err := c.ser.Encode(context.Background(), d.topic+"-value", benchSchema, map[string]any{
				"id": int64(i), "member": int64(i * 7919 % 1_000_003), "page": fmt.Sprintf("/profile/view/%d", i%5000),
				"agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)", "referrer": ref,
				"durationMs": int32(i % 10000)})
			if err != nil {
				b.Fatal(err)
			}
			d.payloads = append(d.payloads, v)
			d.bytes += int64(len(v))
			recs = append(recs, &kgo.Record{Topic: d.topic, Partition: int32(i % 6), Value: v,
				Timestamp: start.Add(time.Duration(i) * 3 * time.Hour / benchRecords)})
		}
		c.produce(b, recs)
		benchSet = d
	})
	if benchSet == nil {
		b.Fatal("benchmark setup failed")
	}
	return benchSet
}

// BenchmarkLoader compares, on the same records and interleaved in each
// iteration (this machine's speed drifts), a loader run into HDFS with a
// plain colinmarc/hdfs write of the same bytes in the same number of files
// (the physical limit) and with decoding alone (frame parse and Avro
// validation in memory). It reports MB/s of record bytes for each and the
// loader's share of the raw write's speed (goal >= 0.7).
func BenchmarkLoader(b *testing.B) {
	d := benchSetup(b)
	for _, codec := range []string{"null", "snappy", "deflate"} {
		b.Run("hdfs-"+codec, func(b *testing.B) {
			fsys, base, uri := filesystest.HDFSURI(b)
			raw, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{testenv.HDFS(b)}, User: "tributary"})
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			var loadTime, rawTime, decodeTime time.Duration
			b.SetBytes(d.bytes)
			for i := range b.N {
				cfg := loader.Config{Name: fmt.Sprintf("bench%d", i), Brokers: []string{d.c.Addr()}, RegistryURL: d.c.registry,
					Topics: d.topic, OutputURI: uri + fmt.Sprintf("/%d", i), Codec: codec, AuditDisable: true}
				start := time.Now()
				l, err := loader.New(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				sum, err := l.Run(context.Background())
				l.Close()
				if err != nil || sum.Records != benchRecords {
					b.Fatalf("run: %+v %v", sum, err)
				}
				loadTime += time.Since(start)

				outBytes := dirBytes(b, fsys, path.Join(base, fmt.Sprint(i), d.topic))
				start = time.Now()
				rawWrite(b, raw, path.Join(base, fmt.Sprintf("raw%d", i)), outBytes, sum.Files)
				rawTime += time.Since(start)

				start = time.Now()
				decodeAll(b, d)
				decodeTime += time.Since(start)
				b.ReportMetric(float64(outBytes), "file-bytes")
			}
			mbs := func(t time.Duration) float64 { return float64(d.bytes) * float64(b.N) / 1e6 / t.Seconds() }
			b.ReportMetric(float64(benchRecords*b.N)/loadTime.Seconds(), "records/s")
			b.ReportMetric(mbs(loadTime), "loader-MB/s")
			b.ReportMetric(mbs(rawTime), "raw-write-MB/s")
			b.ReportMetric(mbs(decodeTime), "decode-MB/s")
			b.ReportMetric(rawTime.Seconds()/loadTime.Seconds(), "loader/raw")
		})
	}
}

// rawWrite writes size bytes in files files with colinmarc/hdfs alone.
func rawWrite(b *testing.B, c *hdfs.Client, dir string, size, files int64) {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	if err := c.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	per := size / files
	for f := range files {
		w, err := c.Create(path.Join(dir, fmt.Sprint(f)))
		if err != nil {
			b.Fatal(err)
		}
		for left := per; left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				b.Fatal(err)
			}
		}
		// Like filesys: retry while the last block is replicating.
		for err := w.Close(); err != nil; err = w.Close() {
			if !hdfs.IsErrReplicating(err) {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// decodeAll parses the frame and validates the Avro of every payload.
func decodeAll(b *testing.B, d *benchData) {
	schemas := map[schema.ID]*avro.Schema{}
	for _, p := range d.payloads {
		id, payload, err := schema.Parse(p)
		if err != nil {
			b.Fatal(err)
		}
		s := schemas[id]
		if s == nil {
			text, err := d.c.reg.SchemaByID(context.Background(), int(id))
			if err != nil {
				b.Fatal(err)
			}
			if s, err = avro.Parse(text); err != nil {
				b.Fatal(err)
			}
			schemas[id] = s
		}
		if err := s.Validate(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func dirBytes(b *testing.B, fsys filesys.FS, dir string) int64 {
	var n int64
	list, err := fsys.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, fi := range list {
		if fi.IsDir() {
			n += dirBytes(b, fsys, path.Join(dir, fi.Name()))
		} else {
			n += fi.Size()
		}
	}
	return n
}
