package partlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// TestRandomizedAgainstModel drives a Log with random appends (single and
// multi-batch, occasionally corrupt), reads at random offsets, clean and
// unclean reopens with different configs, and retention, checking every
// answer against an in-memory model: a slice of values by offset.
func TestRandomizedAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	randCfg := func() Config {
		return Config{
			SegmentBytes:       int64(300 + rng.IntN(3000)),
			IndexIntervalBytes: 1 + rng.IntN(600),
			RetentionMs:        -1,
			RetentionBytes:     []int64{0, 2000, 6000}[rng.IntN(3)],
		}
	}
	cfg := randCfg()
	l := newLog(t, cfg)
	var model []string // model[o] = value at offset o
	start := int64(0)
	for step := range 1500 {
		switch op := rng.IntN(100); {
		case op < 50: // append
			nb := 1 + rng.IntN(3)
			if rng.IntN(4) > 0 {
				nb = 1
			}
			var b []byte
			var vs []string
			for range nb {
				n := 1 + rng.IntN(6)
				var rec [][]byte
				for range n {
					v := fmt.Sprintf("s%d-o%d-%x", step, len(model)+len(vs), rng.Uint64()>>uint(rng.IntN(64)))
					vs = append(vs, v)
					rec = append(rec, []byte(v))
				}
				b = append(b, logtest.NewBatch(rec...)...)
			}
			if rng.IntN(20) == 0 {
				b[rng.IntN(len(b))] ^= 0x55
				if _, err := l.Append(b); err == nil {
					// A flip of a base offset byte is not covered by any check.
					model = append(model, vs...)
				} else if !errors.Is(err, ErrCorruptBatch) {
					t.Fatalf("step %d: corrupt append: %v", step, err)
				}
				break
			}
			r := mustAppend(t, l, b)
			if r.BaseOffset != int64(len(model)) || r.LastOffset != int64(len(model)+len(vs)-1) {
				t.Fatalf("step %d: append at %d..%d, model end %d", step, r.BaseOffset, r.LastOffset, len(model))
			}
			model = append(model, vs...)
		case op < 85: // read
			if len(model) == 0 {
				break
			}
			off := start + rng.Int64N(int64(len(model))-start+2) - 1
			v, err := l.Read(off, 1+rng.IntN(2000))
			if off < start {
				if !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("step %d: read %d below start %d: %v", step, off, start, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("step %d: read %d: %v", step, off, err)
			}
			b, err := v.Bytes()
			v.Release()
			if err != nil {
				t.Fatal(err)
			}
			if off >= int64(len(model)) {
				if len(b) != 0 {
					t.Fatalf("step %d: read at end returned %d bytes", step, len(b))
				}
				break
			}
			offs, vals := logtest.Values(b)
			if len(offs) == 0 || offs[0] > off || offs[len(offs)-1] < off {
				t.Fatalf("step %d: read %d returned offsets %v", step, off, offs)
			}
			for i, o := range offs {
				if model[o] != string(vals[i]) {
					t.Fatalf("step %d: offset %d reads %q, model %q", step, o, vals[i], model[o])
				}
			}
		case op < 92: // reopen, clean or not, maybe with other settings
			cfg = randCfg()
			if rng.IntN(2) == 0 {
				crash(t, l)
				l = newLog(t, cfg, l.Dir())
			} else {
				l = reopen(t, l, cfg)
			}
		case op < 97: // retention
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatalf("step %d: retention: %v", step, err)
			}
		default:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if l.EndOffset() != int64(len(model)) {
			t.Fatalf("step %d: end %d, model %d", step, l.EndOffset(), len(model))
		}
		if l.StartOffset() < start || l.StartOffset() > int64(len(model)) {
			t.Fatalf("step %d: start %d (was %d)", step, l.StartOffset(), start)
		}
		start = l.StartOffset()
	}
	// Finally the whole log reads back in order.
	if got := readValues(t, l, start); !equalStrings(got, model[start:]) {
		t.Fatalf("final read differs from the model (%d vs %d values)", len(got), len(model)-int(start))
	}
}
