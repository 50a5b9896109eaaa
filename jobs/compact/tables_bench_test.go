package compact_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/jobs/tables"
	"github.com/tributary/tributary/pipeline/pageview"
)

// BenchmarkTablesScan measures what compaction buys a reader: one hour of
// the pipeline's page views (500,000 records, TRIBUTARY_FULL=1: 2,000,000)
// in the loader's Avro files is compacted three times (rows/s and bytes in
// and out, medians), then registered twice in the Hive Metastore of make
// test as the pipeline registers it (jobs/tables: an Avro table, one
// partition), once at the Avro files and once at the compacted Parquet,
// and Spark SQL 3.5 (enableHiveSupport, default settings) runs `count(*),
// sum(seq)` over each, interleaved, three times each: the medians and
// their ratio. spark-table reads both through the tables; parquet-reader
// reads the Parquet files with Spark's own reader instead (parquet.`dir`),
// against the same Avro table.
//
// It needs the servers and readers of make test and is skipped, saying
// so, without them; it does its own three runs, so run it once:
//
//	bash scripts/with-servers.sh go test ./jobs/compact -run '^$' -bench TablesScan -benchtime 1x
//
// Each scan's time is the difference of consecutive queries'
// current_timestamp() in one session (Spark fixes it as a query starts), so
// the session's start is not in it.
func BenchmarkTablesScan(b *testing.B) {
	for _, env := range []string{testenv.EnvHiveMetastore, testenv.EnvPython} {
		if os.Getenv(env) == "" {
			b.Skipf("%s is unset: run through scripts/with-servers.sh, which starts the Hive Metastore and names the Python with pyspark", env)
		}
	}
	uri := testenv.HiveMetastore(b)
	records := 500_000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		records = 2_000_000
	}
	const topic = pageview.Topic
	hour := time.Date(2026, 11, 2, 13, 0, 0, 0, time.UTC)
	fsys := filesys.Local()
	src := b.TempDir()
	var seqSum int64
	dir := writePageViewHour(b, fsys, src, topic, hour, records, &seqSum)

	// Compaction, three times from the same loaded files.
	var compacted string
	var rowsPerS, cpuRowsPerS []float64
	var sum compact.Summary
	for i := range 3 {
		base := path.Join(b.TempDir(), fmt.Sprint(i))
		if err := os.CopyFS(hours.Dir(base, topic, hour), os.DirFS(dir)); err != nil {
			b.Fatal(err)
		}
		c, err := compact.New(compact.Config{FS: fsys, Base: base, Delay: time.Minute,
			ClosedThrough: func(context.Context) (time.Time, error) { return hour.Add(24 * time.Hour), nil }})
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), cpuSeconds()
		if sum, err = c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		wall, cpu := time.Since(start), cpuSeconds()-cpu0
		if sum.HoursCompacted != 1 || sum.Records != int64(records) {
			b.Fatalf("compaction summary %+v, want one hour of %d records", sum, records)
		}
		rowsPerS = append(rowsPerS, float64(records)/wall.Seconds())
		cpuRowsPerS = append(cpuRowsPerS, float64(records)/cpu)
		compacted = base
	}
	// A benchmark with sub-benchmarks reports nothing itself.
	b.Run("compact", func(b *testing.B) {
		b.Logf("compaction rows/s %v (CPU %v)", rowsPerS, cpuRowsPerS)
		b.ReportMetric(median(rowsPerS), "rows/s")
		b.ReportMetric(median(cpuRowsPerS), "rows/cpu-s")
		b.ReportMetric(float64(sum.BytesIn), "avro-bytes")
		b.ReportMetric(float64(sum.BytesOut), "parquet-bytes")
		b.ReportMetric(float64(sum.BytesOut)/float64(sum.BytesIn), "parquet/avro-bytes")
	})

	// The two tables, registered as the pipeline registers its hours.
	db := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	register := func(name string, want []hours.Partition) {
		m, err := tables.New(tables.Config{URIs: []string{uri}, Database: db, TableName: name, FileSystem: "file:///"}, pageViewSchemas{}, tables.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		if err := m.Sync(context.Background(), topic, want); err != nil {
			b.Fatal(err)
		}
	}
	pub, err := hours.PublishedPartitions(fsys, compacted, topic, nil)
	if err != nil || len(pub) != 1 || pub[0].Format != string(hours.Parquet) {
		b.Fatalf("published %+v, %v: want the compacted hour", pub, err)
	}
	register("pv_parquet", pub)
	avro := pub[0]
	avro.Location, avro.Format = dir, string(hours.Avro)
	register("pv_avro", []hours.Partition{avro})

	scans := []struct{ name, parquet string }{
		{"spark-table", db + ".pv_parquet"},
		{"parquet-reader", "parquet.`file://" + pub[0].Location + "`"},
	}
	for _, s := range scans {
		b.Run(s.name, func(b *testing.B) {
			from := map[string]string{"avro": db + ".pv_avro", "parquet": s.parquet}
			// One warm-up scan of each, then avro, parquet three times.
			queries := []string{"SELECT count(*) AS n FROM " + from["avro"], "SELECT count(*) AS n FROM " + from["parquet"]}
			var order []string
			for range 3 {
				for _, f := range []string{"avro", "parquet"} {
					order = append(order, f)
					queries = append(queries, "SELECT count(*) AS n, sum(seq) AS s, unix_micros(current_timestamp()) AS t FROM "+from[f])
				}
			}
			queries = append(queries, "SELECT unix_micros(current_timestamp()) AS t")
			out := testenv.SparkSQL(b, uri, queries...)
			times := map[string][]float64{}
			for i, f := range order {
				row := out[2+i][0]
				if row["n"] != float64(records) || row["s"] != float64(seqSum) {
					b.Fatalf("%s: Spark reads count %v, sum(seq) %v; want %d, %d", from[f], row["n"], row["s"], records, seqSum)
				}
				times[f] = append(times[f], (out[3+i][0]["t"].(float64)-row["t"].(float64))/1e6)
			}
			b.Logf("%s: scan seconds avro %v, parquet %v", s.name, times["avro"], times["parquet"])
			b.ReportMetric(median(times["avro"]), "avro-scan-s")
			b.ReportMetric(median(times["parquet"]), "parquet-scan-s")
			b.ReportMetric(median(times["avro"])/median(times["parquet"]), "avro/parquet-scan")
		})
	}
}

// cpuSeconds is the user plus system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// pageViewSchemas is the registry of the benchmark's tables: every id is
// the page-view schema.
type pageViewSchemas struct{}

func (pageViewSchemas) Latest(context.Context, string) (int, string, error) {
	return 1, pageview.Schema, nil
}
func (pageViewSchemas) SchemaByID(context.Context, int) (string, error) { return pageview.Schema, nil }

// writePageViewHour writes n page views of four producers into hour as the
// loader does: one deflate Avro file per partition (six, by user), its
// records in timestamp order, blocks of about 2,000 records. It returns the
// hour's directory and adds the seqs to seqSum.
func writePageViewHour(b *testing.B, fsys filesys.FS, base, topic string, hour time.Time, n int, seqSum *int64) string {
	b.Helper()
	codec, err := goavro.NewCodec(pageview.Schema)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	producers := []string{"dc1-1f2e3d4c", "dc1-99aa0b1c", "dc2-5e6f7a8b", "dc2-0c0d0e0f"}
	parts := make([][]any, 6)
	step := time.Hour / time.Duration(n)
	for i := range n {
		producer := producers[i%len(producers)]
		seq := int64(i / len(producers))
		*seqSum += seq
		ts := hour.Add(time.Duration(i)*step + time.Duration(rng.IntN(1000))*time.Microsecond)
		ev := pageview.Event(producer[:3], producer, seq, ts)
		p := int(seq*7919%1000) % len(parts)
		parts[p] = append(parts[p], ev)
	}
	dir := hours.Dir(base, topic, hour)
	var first int64
	for p, recs := range parts {
		var buf bytes.Buffer
		w, err := goavro.NewOCFWriter(goavro.OCFConfig{W: &buf, Codec: codec, CompressionName: goavro.CompressionDeflateLabel})
		if err != nil {
			b.Fatal(err)
		}
		for chunk := range slices.Chunk(recs, 2000) {
			if err := w.Append(chunk); err != nil {
				b.Fatal(err)
			}
		}
		name := hours.LoaderFile{Topic: topic, Partition: int32(p), First: first, Last: first + int64(len(recs)) - 1, SchemaID: 1, Format: hours.Avro}.Name()
		first += int64(len(recs))
		if err := filesys.WriteFile(fsys, path.Join(dir, name), buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
