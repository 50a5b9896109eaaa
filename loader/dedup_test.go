package loader

import (
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/mirror/origin"
)

// TestDuplicateGaps feeds origins straight to the de-duplication: a first
// copy behind higher offsets lands, its second copy does not, and the
// gaps kept are bounded, the lowest forgotten first.
func TestDuplicateGaps(t *testing.T) {
	pl := &partLoad{l: &Loader{log: slog.Default()}, origins: map[string]int64{}, gaps: map[string][]OffsetRange{}}
	dupOf := func(source string, off int64) bool {
		t.Helper()
		r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: origin.Header, Value: origin.Append(nil, source, 3, off)}}}
		d, err := pl.duplicate(r)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	dup := func(off int64) bool { t.Helper(); return dupOf("dc2", off) }
	// A source partition's very first record refused: 1 comes before 0.
	if dupOf("dc1", 1) || dupOf("dc1", 0) || !dupOf("dc1", 0) || !dupOf("dc1", 1) {
		t.Fatalf("dc1 offsets 1, 0 not loaded exactly once (gaps %v)", pl.gaps)
	}
	for _, step := range []struct {
		off int64
		dup bool
	}{{10, false}, {9, false}, {9, true}, {11, false}, {11, true}, {15, false}, {13, false}, {13, true}, {12, false}, {14, false},
		{12, true}, {14, true}, {15, true}, {16, false}} {
		if got := dup(step.off); got != step.dup {
			t.Fatalf("origin offset %d: duplicate %t, want %t (gaps %v)", step.off, got, step.dup, pl.gaps)
		}
	}
	if g := pl.gaps["dc2/3"]; len(g) != 1 || g[0] != (OffsetRange{0, 8}) {
		t.Fatalf("dc2/3 gaps %v, want only 0-8 (never seen) left", g)
	}
	// Every other offset missing: one gap each, the oldest forgotten.
	for i := int64(0); i <= maxOriginGaps+5; i++ {
		if dup(20 + 2*i) {
			t.Fatalf("origin offset %d dropped on its first copy", 20+2*i)
		}
	}
	if n := len(pl.gaps["dc2/3"]); n != maxOriginGaps {
		t.Fatalf("%d gaps kept, want %d", n, maxOriginGaps)
	}
	if !dup(5) {
		t.Error("origin offset 5, in the forgotten lowest gap, was loaded")
	}
	if !dup(21) {
		t.Error("origin offset 21, in a forgotten gap, was loaded: the bound keeps the newest gaps")
	}
	last := int64(20 + 2*(maxOriginGaps+5) - 1)
	if dup(last) || !dup(last) {
		t.Errorf("origin offset %d, in the newest gap, is not loaded exactly once", last)
	}
}
