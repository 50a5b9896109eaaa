package partlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// TestCorruption damages a copy of a log many times over (byte flips and
// truncations of .log, .index and .timeindex files, with and without the
// clean-shutdown marker) and checks that Open succeeds, that every batch
// before the first damaged byte reads back, and that nothing read back
// differs from what was written.
func TestCorruption(t *testing.T) {
	cfg := Config{SegmentBytes: 8 << 10, IndexIntervalBytes: 512, RetentionMs: -1}
	src := newLog(t, cfg)
	want := map[int64]string{}
	type loc struct {
		seg      int64
		from, to int64 // byte range of the batch in its segment
		first    int64
		last     int64
	}
	var batches []loc
	for i := range 300 {
		n := 1 + i%5
		vs := make([][]byte, n)
		for j := range vs {
			vs[j] = fmt.Appendf(nil, "b%d-r%d-%s", i, j, strings.Repeat("x", i%90))
		}
		r := mustAppend(t, src, logtest.NewBatch(vs...))
		for j := range vs {
			want[r.BaseOffset+int64(j)] = string(vs[j])
		}
		seg := (*src.segs.Load())[len(*src.segs.Load())-1]
		size := seg.size.Load()
		batches = append(batches, loc{seg.base, size - int64(len(logtest.NewBatch(vs...))), size, r.BaseOffset, r.LastOffset})
	}
	end := src.EndOffset()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	var segBases []int64
	for _, b := range batches {
		if len(segBases) == 0 || segBases[len(segBases)-1] != b.seg {
			segBases = append(segBases, b.seg)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for trial := range 60 {
		dir := filepath.Join(t.TempDir(), "p-0")
		copyDir(t, src.Dir(), dir)
		seg := segBases[rng.IntN(len(segBases))]
		suffix := []string{logSuffix, logSuffix, logSuffix, indexSuffix, timeIndexSuffix, snapshotSuffix}[rng.IntN(6)]
		path := segmentPath(dir, seg, suffix)
		if suffix == snapshotSuffix {
			path = snapshotPath(dir, end) // the one Close wrote
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			continue
		}
		damageAt := int64(rng.IntN(len(data)))
		what := ""
		if rng.IntN(3) == 0 {
			data = data[:damageAt]
			what = "truncate"
		} else {
			for k := range 1 + rng.IntN(3) {
				p := damageAt + int64(k*rng.IntN(50))
				if p < int64(len(data)) {
					data[p] ^= byte(1 + rng.IntN(255))
				}
			}
			what = "flip"
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		clean := rng.IntN(2) == 0
		if !clean {
			os.Remove(cleanShutdownPath(dir))
		}
		desc := fmt.Sprintf("trial %d: %s %s%s at %d, clean=%v", trial, what, filepath.Base(path), "", damageAt, clean)

		l, err := Open(dir, Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: cfg.IndexIntervalBytes, RetentionMs: -1, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("%s: Open: %v", desc, err)
		}
		// Everything before the damage must still be there.
		intact := int64(-1)
		for _, b := range batches {
			if suffix == logSuffix && b.seg == seg && b.to > damageAt || suffix == logSuffix && b.seg > seg {
				break
			}
			intact = b.last
		}
		if suffix != logSuffix {
			intact = end - 1
		}
		got := map[int64]string{}
		for off := l.StartOffset(); off < l.EndOffset(); off++ {
			v, err := l.Read(off, 4096)
			if errors.Is(err, ErrCorruption) {
				continue
			}
			if err != nil {
				t.Fatalf("%s: read %d: %v", desc, off, err)
			}
			b, err := v.Bytes()
			v.Release()
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				break
			}
			if _, _, err := ValidateBatch(b); err != nil {
				t.Fatalf("%s: read %d returned a bad batch: %v", desc, off, err)
			}
			offs, vs := logtest.Values(b)
			for i, o := range offs {
				if want[o] != string(vs[i]) {
					t.Fatalf("%s: offset %d reads %q, wrote %q", desc, o, vs[i], want[o])
				}
				got[o] = string(vs[i])
			}
			off = max(off, offs[len(offs)-1])
		}
		for o := int64(0); o <= intact; o++ {
			if _, ok := got[o]; !ok {
				t.Fatalf("%s: offset %d (before the damage, intact up to %d) not readable; end %d", desc, o, intact, l.EndOffset())
			}
		}
		// The log takes appends after any of this.
		if _, err := l.Append(logtest.NewBatch([]byte("after"))); err != nil {
			t.Fatalf("%s: append: %v", desc, err)
		}
		l.Close()
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
