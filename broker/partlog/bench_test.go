package partlog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// benchBatch returns a batch of n records of 100-byte values.
func benchBatch(n int) []byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 100)
	}
	return logtest.NewBatch(vs...)
}

func benchAppend(b *testing.B, batch []byte, records int, flushAtEnd ...bool) {
	l := newLog(b, Config{RetentionMs: -1})
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch) // Append patches the base offset in place
		if _, err := l.Append(buf); err != nil {
			b.Fatal(err)
		}
	}
	if len(flushAtEnd) > 0 && flushAtEnd[0] {
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkAppend100B(b *testing.B) {
	for _, n := range []int{1, 50, 500} {
		b.Run(map[int]string{1: "batch=1", 50: "batch=50", 500: "batch=500"}[n], func(b *testing.B) {
			benchAppend(b, benchBatch(n), n)
		})
	}
}

// BenchmarkAppend1MiB appends 1 MiB batches (no fsync per append), to set
// next to `dd bs=1M` on the same disk.
// The fsync=end variant syncs once after the last append, to set next to
// `dd conv=fdatasync`.
func BenchmarkAppend1MiB(b *testing.B) {
	batch := logtest.NewBatch(bytes.Repeat([]byte("x"), 1<<20-200))
	b.Run("fsync=none", func(b *testing.B) { benchAppend(b, batch, 1) })
	b.Run("fsync=end", func(b *testing.B) { benchAppend(b, batch, 1, true) })
}

// BenchmarkReadSequential reads a 64 MiB log front to back in 1 MiB fetches
// through Bytes (pread).
func BenchmarkReadSequential(b *testing.B) {
	l := newLog(b, Config{RetentionMs: -1, SegmentBytes: 16 << 20})
	batch := benchBatch(50)
	buf := make([]byte, len(batch))
	for l.Size() < 64<<20 {
		copy(buf, batch)
		if _, err := l.Append(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(l.Size())
	b.ResetTimer()
	var records int64
	for i := 0; i < b.N; i++ {
		for off := int64(0); off < l.EndOffset(); {
			v, err := l.Read(off, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			p, err := v.Bytes()
			v.Release()
			if err != nil || len(p) == 0 {
				b.Fatal(err, len(p))
			}
			n := int64(len(p) / len(batch))
			records += n * 50
			off += n * 50
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkClean cleans a dirty compacted log of 32 MiB (100-byte values
// over 10,000 keys, batches of 50, as Kafka's cleaner benchmarks use):
// MB/s of dirty log read, to set next to the "MB/sec" of Kafka's
// log-cleaner.log on the same data.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []int16{0, 3} {
		b.Run(map[int16]string{0: "codec=none", 3: "codec=lz4"}[codec], func(b *testing.B) {
			var dirty, records int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l := newLog(b, Config{SegmentBytes: 4 << 20, RetentionMs: -1, Compact: true, MinCleanableDirtyRatio: 0.01})
				n := 0
				for l.Size() < 32<<20 {
					rs := make([]logtest.Record, 50)
					for j := range rs {
						rs[j] = logtest.Record{Key: fmt.Appendf(nil, "key-%05d", (n*7919)%10_000), Value: bytes.Repeat([]byte{byte('a' + n%26)}, 100)}
						n++
					}
					batch := logtest.Batch(logtest.Options{Timestamp: 1}, rs...)
					if codec != 0 {
						batch = compressBatch(b, batch, codec)
					}
					if _, err := l.Append(batch); err != nil {
						b.Fatal(err)
					}
				}
				dirty += sizeBelow(l, (*l.segs.Load())[len(*l.segs.Load())-1].base)
				records += int64(n)
				b.StartTimer()
				cleanAll(b, l, 0)
			}
			b.StopTimer()
			b.SetBytes(dirty / int64(b.N))
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
