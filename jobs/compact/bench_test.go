package compact

import (
	"context"
	"fmt"
	"os"
	"path"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/internal/filesys"
)

// BenchmarkCompact compacts one hour of Avro (deflate) files of the test
// schema on the local disk and reports MB/s of Avro in (b.SetBytes) and the
// size ratio Parquet/Avro; zstd-sorted sorts it by user (Config.SortBy),
// the cost of the sort buffer. TRIBUTARY_FULL=1 uses a 10x larger hour.
func BenchmarkCompact(b *testing.B) {
	for _, bc := range []struct {
		name, codec string
		sortBy      []string
	}{{"snappy", "snappy", nil}, {"zstd", "zstd", nil}, {"zstd-sorted", "zstd", []string{"user"}}} {
		codec := bc.codec
		b.Run(bc.name, func(b *testing.B) {
			files, perFile := 8, 2000
			if os.Getenv("TRIBUTARY_FULL") == "1" {
				files, perFile = 20, 8000
			}
			fsys := filesys.Local()
			tmpl := b.TempDir()
			dirs := writeHours(b, fsys, tmpl, "pv", hour0, 1, files, perFile)
			list, _ := fsys.ReadDir(dirs[0])
			var avroBytes int64
			for _, fi := range list {
				avroBytes += fi.Size()
			}
			var ratio float64
			var cpu time.Duration
			b.SetBytes(avroBytes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				base := path.Join(b.TempDir(), fmt.Sprint(i))
				dst := hours.Dir(base, "pv", hour0)
				for _, fi := range list {
					data, _ := filesys.ReadFile(fsys, path.Join(dirs[0], fi.Name()))
					if err := filesys.WriteFile(fsys, path.Join(dst, fi.Name()), data); err != nil {
						b.Fatal(err)
					}
				}
				sum, used := timedRun(b, Config{FS: fsys, Base: base, Codec: codec, ClosedThrough: closedAll}, "pv", bc.sortBy)
				cpu += used
				if sum.HoursCompacted != 1 {
					b.Fatalf("summary %+v", sum)
				}
				ratio = float64(sum.BytesOut) / float64(sum.BytesIn)
			}
			b.ReportMetric(ratio, "parquet/avro")
			b.ReportMetric(float64(files*perFile)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			// On a shared machine wall time drifts with the load; CPU time
			// of the process during the runs does much less.
			b.ReportMetric(float64(avroBytes)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
			b.ReportMetric(float64(files*perFile)*float64(b.N)/cpu.Seconds(), "records/cpu-s")
		})
	}
}

// timedRun makes a Compactor of cfg (topic sorted by sortBy unless nil),
// starts the timer and runs it once, returning its summary and the CPU
// time the run took. The timer is stopped on entry.
func timedRun(b *testing.B, cfg Config, topic string, sortBy []string) (Summary, time.Duration) {
	b.Helper()
	if sortBy != nil {
		cfg.SortBy = map[string][]string{topic: sortBy}
	}
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	c0 := cpuTime()
	sum, err := c.Run(context.Background())
	used := cpuTime() - c0
	if err != nil {
		b.Fatal(err)
	}
	return sum, used
}

// cpuTime is the user plus system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompactWide compacts the wide sample's two hours (size_test.go)
// with zstd, unsorted and sorted by user_id, and reports the CPU time of
// the runs and the size ratio: what a sort key costs and gains.
func BenchmarkCompactWide(b *testing.B) {
	fsys := filesys.Local()
	tmpl := b.TempDir()
	s := wideSample(30000)
	dirs := writeSample(b, fsys, tmpl, s)
	for _, sortBy := range [][]string{nil, {"user_id"}} {
		name := "unsorted"
		if sortBy != nil {
			name = "sorted"
		}
		b.Run(name, func(b *testing.B) {
			var ratio float64
			var cpu time.Duration
			var avroBytes int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				base := path.Join(b.TempDir(), fmt.Sprint(i))
				avroBytes = 0
				for h, d := range dirs {
					list, _ := fsys.ReadDir(d)
					for _, fi := range list {
						data, _ := filesys.ReadFile(fsys, path.Join(d, fi.Name()))
						if err := filesys.WriteFile(fsys, path.Join(hours.Dir(base, s.topic, hour0.Add(time.Duration(h)*time.Hour)), fi.Name()), data); err != nil {
							b.Fatal(err)
						}
						avroBytes += fi.Size()
					}
				}
				b.SetBytes(avroBytes)
				sum, used := timedRun(b, Config{FS: fsys, Base: base, ClosedThrough: closedAll}, s.topic, sortBy)
				cpu += used
				ratio = float64(sum.BytesOut) / float64(sum.BytesIn)
			}
			b.ReportMetric(ratio, "parquet/avro")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(2*30000)*float64(b.N)/cpu.Seconds(), "records/cpu-s")
		})
	}
}
