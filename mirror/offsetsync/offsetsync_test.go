package offsetsync

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	s := Sync{Source: "dc1", Topic: "page-views", Partition: 3, SourceOffset: 1200, TargetTopic: "dc1.page-views", TargetOffset: 77, Count: 9}
	got, err := Parse(s.Key(), s.Value())
	if err != nil || got != s {
		t.Fatalf("Parse = %+v, %v; want %+v", got, err, s)
	}
	for _, bad := range [][2][]byte{{s.Key()[:5], s.Value()}, {s.Key(), append(s.Value(), 0)}, {append([]byte{0, 1}, s.Key()[2:]...), s.Value()}} {
		if _, err := Parse(bad[0], bad[1]); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%x, %x) = %v, want ErrMalformed", bad[0], bad[1], err)
		}
	}
}

func FuzzParse(f *testing.F) {
	s := Sync{Source: "dc1", Topic: "t", SourceOffset: 1, TargetTopic: "t", TargetOffset: 2, Count: 3}
	f.Add(s.Key(), s.Value())
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, err := Parse(key, value)
		if err != nil {
			return
		}
		again, err := Parse(got.Key(), got.Value())
		if err != nil || again != got {
			t.Fatalf("re-encoded %+v parses as %+v, %v", got, again, err)
		}
	})
}

// TestTranslate: exact within runs, across gaps (to the next run's first
// record), to the latest copy of a range mirrored twice, right after the
// end, and nothing past it.
func TestTranslate(t *testing.T) {
	st := NewStore()
	add := func(src, n, tgt int64) {
		st.Add(Sync{Source: "dc1", Topic: "t", Partition: 0, SourceOffset: src, TargetTopic: "dc1.t", TargetOffset: tgt, Count: n})
	}
	// First copy: source 0..149 at target 0..149, then a crash; the mirror
	// restarts from source 100: 100..119 at 150..169; source offset 120 is
	// a transaction marker; 121..199 at 170..248.
	add(0, 100, 0)
	add(100, 50, 100)
	add(100, 20, 150)
	add(121, 79, 170)
	for _, c := range []struct {
		committed, want int64
		ok              bool
	}{
		{0, 0, true}, {99, 99, true},
		{100, 150, true}, {110, 160, true}, {119, 169, true}, // the latest copy
		{120, 170, true}, // the gap: the first record past it
		{121, 170, true}, {199, 248, true},
		{200, 249, true}, // everything mirrored: the next target offset
		{201, 0, false},
	} {
		topic, got, ok := st.Translate("dc1", "t", 0, c.committed)
		if ok != c.ok || (ok && (got != c.want || topic != "dc1.t")) {
			t.Errorf("Translate(%d) = %s %d %v, want dc1.t %d %v", c.committed, topic, got, ok, c.want, c.ok)
		}
	}
	// A run written again as it grew replaces the shorter one.
	add(121, 100, 170)
	if _, got, _ := st.Translate("dc1", "t", 0, 221); got != 270 {
		t.Errorf("after the run grew: Translate(221) = %d, want 270", got)
	}
	if _, _, ok := st.Translate("dc1", "t", 1, 0); ok {
		t.Error("a partition without runs translated")
	}
}
