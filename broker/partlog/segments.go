package partlog

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// SegmentInfo describes one segment as the legacy ListOffsets v0 lookup
// (Kafka's fetchOffsetsBefore) needs it.
type SegmentInfo struct {
	BaseOffset   int64
	Size         int64     // bytes readers may see
	LastModified time.Time // of the .log file: the time of its last append, or of its creation
}

// Segments returns the segments in offset order. A segment that retention
// deletes during the call is left out; any other error reading a file's
// modification time is returned. No file descriptor is used.
func (l *Log) Segments() ([]SegmentInfo, error) {
	if l.shut.Load() {
		return nil, ErrClosed
	}
	segs := *l.segs.Load()
	out := make([]SegmentInfo, 0, len(segs))
	for _, s := range segs {
		if !s.acquire() {
			continue
		}
		st, err := os.Stat(segmentPath(l.dir, s.base, logSuffix))
		deleted := s.deleted.Load()
		s.release()
		switch {
		case err == nil:
		case deleted:
			continue
		case l.shut.Load() && errors.Is(err, fs.ErrNotExist):
			return nil, ErrClosed
		default:
			return nil, err
		}
		out = append(out, SegmentInfo{BaseOffset: s.base, Size: s.size.Load(), LastModified: st.ModTime()})
	}
	return out, nil
}
