package loader_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/testkit/testenv"
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
// iteration (this machine's speed drifts), a loader run with a plain write
// of the same bytes in the same number of files (the physical limit: with
// colinmarc/hdfs into HDFS, with os into a local directory) and with
// decoding alone (frame parse and Avro validation in memory). It reports
// MB/s of record bytes for each and the loader's share of the raw write's
// speed (goal >= 0.7 on HDFS).
func BenchmarkLoader(b *testing.B) {
	d := benchSetup(b)
	for _, target := range []string{"hdfs", "local"} {
		for _, codec := range []string{"null", "snappy", "deflate"} {
			b.Run(target+"-"+codec, func(b *testing.B) {
				benchLoader(b, d, target, codec)
			})
		}
	}
}

func benchLoader(b *testing.B, d *benchData, target, codec string) {
	var (
		fsys filesys.FS
		base string
		uri  string
		raw  func(dir string, size, files int64)
	)
	if target == "hdfs" {
		fsys, base, uri = filesystest.HDFSURI(b)
		cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{testenv.HDFS(b)}, User: "tributary"})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		raw = func(dir string, size, files int64) { rawWrite(b, hdfsCreate(b, cl, dir), size, files) }
	} else {
		fsys, base = filesystest.Local(b)
		uri = "file://" + base
		raw = func(dir string, size, files int64) { rawWrite(b, localCreate(b, dir), size, files) }
	}
	var loadTime, rawTime, decodeTime time.Duration
	b.SetBytes(d.bytes)
	for i := range b.N {
		cfg := loader.Config{Name: fmt.Sprintf("bench%d", i), Brokers: []string{d.c.Addr()}, RegistryURL: d.c.registry,
			Topics: d.topic, OutputURI: uri + fmt.Sprintf("/%d", i), Codec: codec, AuditDisable: true,
			Logger: testenv.Logger(b, slog.LevelWarn)}
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
		raw(path.Join(base, fmt.Sprintf("raw%d", i)), outBytes, sum.Files)
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
}

// hdfsCreate returns a create function for files under dir on HDFS with
// colinmarc/hdfs alone; close retries while the last block is replicating,
// like filesys.
func hdfsCreate(b *testing.B, c *hdfs.Client, dir string) func(name string) io.WriteCloser {
	if err := c.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return func(name string) io.WriteCloser {
		w, err := c.Create(path.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		return closeRetrying{w}
	}
}

type closeRetrying struct{ *hdfs.FileWriter }

func (w closeRetrying) Close() error {
	err := w.FileWriter.Close()
	for ; hdfs.IsErrReplicating(err); err = w.FileWriter.Close() {
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// localCreate returns a create function for files under dir on the local
// disk, with os alone; close syncs first, as filesys's local files do.
func localCreate(b *testing.B, dir string) func(name string) io.WriteCloser {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return func(name string) io.WriteCloser {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		return syncClosing{f}
	}
}

type syncClosing struct{ *os.File }

func (f syncClosing) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// rawWrite writes size bytes in files files, one after the other.
func rawWrite(b *testing.B, create func(name string) io.WriteCloser, size, files int64) {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	per := size / files
	for f := range files {
		w := create(fmt.Sprint(f))
		for left := per; left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
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
