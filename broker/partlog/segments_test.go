package partlog

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func TestSegmentsListsBasesSizesAndFileTimes(t *testing.T) {
	l := newLog(t, Config{SegmentBytes: 100}) // a segment per batch
	var ends []int64
	for i := range 3 {
		r := mustAppend(t, l, logtest.NewBatch(fmt.Appendf(nil, "a%d", i), fmt.Appendf(nil, "b%d", i)))
		ends = append(ends, r.LastOffset+1)
	}
	mt := time.UnixMilli(1_000_000_000_000)
	if err := os.Chtimes(segmentPath(l.Dir(), 2, logSuffix), mt, mt); err != nil {
		t.Fatal(err)
	}
	segs, err := l.Segments()
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 3 || segs[0].BaseOffset != 0 || segs[1].BaseOffset != ends[0] || segs[2].BaseOffset != ends[1] {
		t.Fatalf("segments %+v, want bases 0 %d %d", segs, ends[0], ends[1])
	}
	for i, s := range segs {
		st, err := os.Stat(segmentPath(l.Dir(), s.BaseOffset, logSuffix))
		if err != nil {
			t.Fatal(err)
		}
		if s.Size != st.Size() || s.Size == 0 || !s.LastModified.Equal(st.ModTime()) {
			t.Errorf("segment %d: %+v, file size %d modified %v", i, s, st.Size(), st.ModTime())
		}
	}
	if !segs[1].LastModified.Equal(mt) {
		t.Errorf("segment 2 modified %v, want %v", segs[1].LastModified, mt)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Segments(); !errors.Is(err, ErrClosed) {
		t.Errorf("Segments after Close: %v, want ErrClosed", err)
	}
}
