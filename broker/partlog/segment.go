package partlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// File name suffixes. Frozen.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	// Producer snapshots are Tributary's own format: a name of Kafka's
	// (".snapshot") made Kafka's tools misread them.
	snapshotSuffix = ".tributary-producers"
)

func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one .log file with its two indexes. Readers reach it through the
// Log's segment list and hold a reference while they use the file; the list
// itself holds one, dropped when retention deletes the segment, and the file
// is closed when the last reference goes.
type segment struct {
	dir      string
	base     int64
	interval int64 // IndexIntervalBytes

	refs atomic.Int32
	// size is how many bytes readers may see: the committed end for the
	// active segment, or the validated end after a rebuild found damage.
	size atomic.Int64
	// maxTs caches the largest batch timestamp; math.MinInt64 = not known yet.
	maxTs atomic.Int64

	// file is the .log file, opened through the FileCache on use.
	file    *fileHandle
	deleted atomic.Bool
	// gaps is the Log's: whether batches may start past the previous
	// one's end (see allowGaps).
	gaps *atomic.Bool

	idxMu      sync.RWMutex
	idxLoaded  bool
	idxTrusted bool // entries built by a walk of this segment in this process
	idx        []offsetEntry
	tidx       []timeEntry

	vmu      sync.Mutex
	verified []span // byte ranges already CRC-checked, sorted, disjoint

	// Writer state, used only by the Log's appender (under Log.mu) while
	// the segment is active. The active segment's index entries are kept
	// in idx and tidx only; the files are written whole when it is sealed.
	next           int64 // next offset to assign
	lastIndexedPos int64
	maxTsOffset    int64 // last offset of the first batch with maxTs
	created        time.Time
}

type span struct{ start, end int64 }

// allowGaps says whether a batch may start past the end of the one before
// it. Only after the cleaner ran or a follower took a compacted leader's
// batches (both leave a cleaner-checkpoint file first); otherwise such a
// base offset (which no CRC covers) is corruption.
func (s *segment) allowGaps() bool { return s.gaps != nil && s.gaps.Load() }

func newSegmentStruct(dir string, base, interval int64, file *fileHandle, gaps *atomic.Bool) *segment {
	s := &segment{dir: dir, base: base, interval: interval, next: base, file: file, gaps: gaps}
	s.refs.Store(1)
	s.maxTs.Store(math.MinInt64)
	return s
}

// createSegment makes the .log file of a fresh, empty active segment (its
// index files are written when it is sealed). Only a roll (essential) may
// use the cache's reserve when descriptors run out; a new partition fails
// with ErrNoDescriptors.
func createSegment(dir string, base, interval int64, now time.Time, files *FileCache, use fileUse, gaps *atomic.Bool) (*segment, error) {
	path := segmentPath(dir, base, logSuffix)
	var f *os.File
	create := func() (err error) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		return err
	}
	var err error
	if use == useEssential {
		err = files.essential(create)
	} else if err = create(); isNoDescriptors(err) {
		files.failures.Add(1)
		err = fmt.Errorf("%w: creating segment %s: %w", ErrNoDescriptors, path, err)
	}
	if err != nil {
		return nil, err
	}
	s := newSegmentStruct(dir, base, interval, files.newHandle(path, f), gaps)
	s.created = now
	s.maxTs.Store(-1)
	s.idxLoaded, s.idxTrusted = true, true
	return s, nil
}

// acquire takes a reference unless the segment has already been released by
// everyone (deleted and unused).
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.file.close()
	}
}

// openFile returns the .log file, opened through the cache; the caller
// must call s.file.release() when done with it.
func (s *segment) openFile(use fileUse) (*os.File, error) {
	if s.deleted.Load() {
		return nil, errSegmentGone
	}
	return s.file.acquire(use)
}

// remove unlinks the segment's files; open descriptors keep working for
// readers that still hold references. The file handle stops opening first:
// a reader that passed openFile's deleted check but finds the file closed
// in the cache must not open the path again, because a new segment with
// the same base offset (TruncateTo's new active segment) may be there by
// then; it gets errSegmentGone and reads the new segment list instead.
func (s *segment) remove() error {
	s.deleted.Store(true)
	s.file.close()
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(segmentPath(s.dir, s.base, suf)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// indexes returns the segment's index entries, loading them on first use.
// Files failing the cheap checks are rebuilt by walking the segment.
func (s *segment) indexes() ([]offsetEntry, []timeEntry, bool, error) {
	s.idxMu.RLock()
	if s.idxLoaded {
		defer s.idxMu.RUnlock()
		return s.idx, s.tidx, s.idxTrusted, nil
	}
	s.idxMu.RUnlock()
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if !s.idxLoaded {
		if err := s.loadIndexesLocked(); err != nil {
			return nil, nil, false, err
		}
	}
	return s.idx, s.tidx, s.idxTrusted, nil
}

func (s *segment) loadIndexesLocked() error {
	size := s.size.Load()
	ib, err := readWhole(segmentPath(s.dir, s.base, indexSuffix))
	if err != nil {
		return err
	}
	tb, err := readWhole(segmentPath(s.dir, s.base, timeIndexSuffix))
	if err != nil {
		return err
	}
	if size > 0 && (len(ib) == 0 || len(tb) == 0) {
		// A missing file (deleted, or lost in a crash) reads as empty, but
		// an empty .timeindex would hide the segment's timestamps: rebuild.
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentPath(s.dir, s.base, suf)); os.IsNotExist(err) {
				return s.rebuildLocked(suf + " file missing")
			}
		}
	}
	idx, ierr := decodeOffsetIndex(ib, size)
	tidx, terr := decodeTimeIndex(tb)
	if err := errors.Join(ierr, terr); err != nil {
		return s.rebuildLocked(err.Error())
	}
	why, err := s.checkIndexes(idx, tidx, size)
	if err != nil {
		return err
	}
	if why != "" {
		return s.rebuildLocked(why)
	}
	s.idx, s.tidx, s.idxLoaded = idx, tidx, true
	return nil
}

// rebuildLocked recreates both indexes by walking the batch headers. A walk
// that stops early (a header that does not parse) leaves the segment
// readable only up to that point.
func (s *segment) rebuildLocked(why string) error {
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return err
	}
	defer s.file.release()
	res, err := scanSegment(f, s.base, s.size.Load(), s.interval, false, s.allowGaps(), nil)
	if err != nil {
		return err
	}
	if res.validEnd < s.size.Load() {
		s.size.Store(res.validEnd)
	}
	if err := s.writeIndexFiles(res.idx, res.tidx); err != nil {
		return fmt.Errorf("rebuild indexes of segment %d (%s): %w", s.base, why, err)
	}
	s.idx, s.tidx, s.idxLoaded, s.idxTrusted = res.idx, res.tidx, true, true
	return nil
}

// writeIndexFiles replaces the .index and .timeindex files atomically.
func (s *segment) writeIndexFiles(idx []offsetEntry, tidx []timeEntry) error {
	var ib, tb []byte
	for _, e := range idx {
		ib = e.appendTo(ib)
	}
	for _, e := range tidx {
		tb = e.appendTo(tb)
	}
	if err := writeFileAtomic(segmentPath(s.dir, s.base, indexSuffix), ib); err != nil {
		return err
	}
	return writeFileAtomic(segmentPath(s.dir, s.base, timeIndexSuffix), tb)
}

// migrateIndexes checks the index files of a segment not loaded yet as a
// first use would (rebuilding files of an older convention) and leaves them
// unloaded, so an upgrade fixes every file without holding them in memory.
func (s *segment) migrateIndexes() error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idxLoaded {
		return nil
	}
	if err := s.loadIndexesLocked(); err != nil {
		return err
	}
	s.idx, s.tidx, s.idxLoaded, s.idxTrusted = nil, nil, false, false
	return nil
}

// rebuildIndexes is rebuildLocked for callers outside the index lock. The
// Log's appender lock must be held if the segment is active.
func (s *segment) rebuildIndexes(why string) error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idxTrusted {
		return nil
	}
	return s.rebuildLocked(why)
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// writerIndexer returns the index state the appender continues from. The
// appender lock must be held; idxMu too if locked is set.
func (s *segment) writerIndexer(locked bool) indexer {
	x := newIndexer(s.base, s.interval)
	x.lastIndexedPos = s.lastIndexedPos
	if ts := s.maxTs.Load(); ts != math.MinInt64 {
		x.maxTs, x.maxTsOffset = ts, s.maxTsOffset
	}
	if !locked {
		s.idxMu.RLock()
		defer s.idxMu.RUnlock()
	}
	if n := len(s.tidx); n > 0 {
		x.lastTimeTs = s.tidx[n-1].ts
	}
	return x
}

// commitIndexer publishes the entries x decided for batches now written
// (the caller stores maxTs, which readers see).
func (s *segment) commitIndexer(x indexer) {
	if len(x.idx) > 0 || len(x.tidx) > 0 {
		s.idxMu.Lock()
		s.idx = append(s.idx, x.idx...)
		s.tidx = append(s.tidx, x.tidx...)
		s.idxMu.Unlock()
	}
	s.lastIndexedPos = x.lastIndexedPos
	s.maxTsOffset = x.maxTsOffset
}

// sealTimeIndexLocked adds the active segment's closing .timeindex entry
// when it is sealed; idxMu must be held.
func (s *segment) sealTimeIndexLocked() {
	x := s.writerIndexer(true)
	x.seal()
	s.tidx = append(s.tidx, x.tidx...)
}

// scanResult is what a sequential walk of a segment found.
type scanResult struct {
	validEnd    int64 // position after the last good batch
	next        int64 // offset after the last good batch
	maxTs       int64
	maxTsOffset int64 // last offset of the first batch with maxTs
	batches     int
	idx         []offsetEntry
	tidx        []timeEntry
	badErr      error // why the walk stopped before the end, if it did
}

// scanSegment reads the segment sequentially from the start up to limit,
// checking every header (and every CRC if verify), that offsets increase from
// base, and builds the index entries the appender would have written. It
// stops at the first bad batch; only I/O errors are returned as errors.
func scanSegment(f *os.File, base, limit, interval int64, verify, gaps bool, each func(batchHeader)) (scanResult, error) {
	res := scanResult{next: base, maxTs: -1}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, limit), 1<<20)
	var buf []byte
	var pos int64
	x := newIndexer(base, interval)
	for pos < limit {
		// A little more than the header: a control batch's marker record.
		hb, err := r.Peek(int(min(limit-pos, controlPeek)))
		if err != nil && err != io.EOF {
			return res, err
		}
		h, herr := checkHeader(hb, limit-pos)
		if herr == nil && (h.baseOffset < res.next || !gaps && h.baseOffset != res.next) {
			herr = fmt.Errorf("base offset %d where %d expected", h.baseOffset, res.next)
		}
		if herr == nil && h.baseOffset-base > math.MaxUint32-int64(h.lastOffsetDelta) {
			herr = fmt.Errorf("offset %d too far from segment base %d", h.baseOffset, base)
		}
		if herr == nil && verify {
			if int64(cap(buf)) < h.size {
				buf = make([]byte, h.size)
			}
			buf = buf[:h.size]
			if _, err := io.ReadFull(r, buf); err != nil {
				return res, err
			}
			_, herr = checkBatch(buf)
		} else if herr == nil {
			if _, err := r.Discard(int(h.size)); err != nil {
				return res, err
			}
		}
		if herr != nil {
			res.badErr = fmt.Errorf("batch at byte %d: %v", pos, herr)
			break
		}
		x.add(pos, h)
		res.next = h.lastOffset() + 1
		res.batches++
		if each != nil {
			each(h)
		}
		pos += h.size
	}
	res.validEnd = pos
	x.seal()
	res.idx, res.tidx, res.maxTs, res.maxTsOffset = x.idx, x.tidx, x.maxTs, x.maxTsOffset
	return res, nil
}

// headerAt reads and checks the batch header at pos.
func headerAt(f *os.File, pos, limit int64) (batchHeader, error) {
	var hb [batchHeaderSize]byte
	if limit-pos < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%d bytes left at %d, less than a header", limit-pos, pos)
	}
	if _, err := f.ReadAt(hb[:], pos); err != nil {
		return batchHeader{}, err
	}
	return checkHeader(hb[:], limit-pos)
}

// find returns the position and header of the first batch in the segment
// whose last offset is >= offset; found is false if there is none below limit.
func (s *segment) find(f *os.File, offset, limit int64) (pos int64, h batchHeader, found bool, err error) {
	idx, _, trusted, err := s.indexes()
	if err != nil {
		return 0, h, false, err
	}
	pos, h, found, err = s.findIn(f, idx, offset, limit)
	if err != nil {
		return 0, h, false, s.walkError(trusted, err)
	}
	return pos, h, found, nil
}

// findIn is find over the given entries; an error means they or the data
// are wrong. As in Kafka's lookup, the walk starts at the last entry whose
// offset is <= offset: that batch ends at the entry's offset, so it is the
// answer if it ends at offset itself, else the walk skips it.
func (s *segment) findIn(f *os.File, idx []offsetEntry, offset, limit int64) (pos int64, h batchHeader, found bool, err error) {
	rel := offset - s.base
	if rel > math.MaxUint32 {
		rel = math.MaxUint32
	}
	if rel < 0 {
		rel = 0
	}
	e, ok := floorByOffset(idx, uint32(rel))
	// Each batch's base offset is at least the one after its predecessor
	// (more after cleaning), and at an entry its last offset is known.
	expectBase, expectLast := s.base, int64(-1)
	if ok {
		pos, expectBase, expectLast = int64(e.pos), -1, s.base+int64(e.rel)
	}
	for pos < limit {
		h, err = headerAt(f, pos, limit)
		if err == nil && expectBase >= 0 && (h.baseOffset < expectBase || h.baseOffset != expectBase && !s.allowGaps()) {
			err = fmt.Errorf("batch at byte %d has base offset %d, want %d or, after cleaning, more", pos, h.baseOffset, expectBase)
		}
		if err == nil && expectLast >= 0 && h.lastOffset() != expectLast {
			err = fmt.Errorf("batch at byte %d has last offset %d, want %d (index entry)", pos, h.lastOffset(), expectLast)
		}
		if err != nil {
			return 0, h, false, err
		}
		if h.lastOffset() >= offset {
			return pos, h, true, nil
		}
		expectBase, expectLast = h.lastOffset()+1, -1
		pos += h.size
	}
	return 0, h, false, nil
}

// checkIndexes verifies, with a few header reads, that the last entry of
// each index file points where it says: the .index entry at a batch ending
// at its offset, the .timeindex entry at a batch ending at its offset whose
// max timestamp is the entry's. This also detects files written by older
// Tributary versions (.index by base offset, .timeindex entries naming the
// next batch, the last one past the segment's end), which always fail it.
// Every entry of a file is written by the same code at once, so the last
// ones speak for the whole file. A non-empty reason means: rebuild.
func (s *segment) checkIndexes(idx []offsetEntry, tidx []timeEntry, size int64) (reason string, err error) {
	if len(idx) == 0 && len(tidx) == 0 && size == 0 {
		return "", nil
	}
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return "", err
	}
	defer s.file.release()
	if n := len(idx); n > 0 {
		e := idx[n-1]
		h, herr := headerAt(f, int64(e.pos), size)
		if herr != nil {
			return fmt.Sprintf(".index entry %d@%d: %v", e.rel, e.pos, herr), nil
		}
		if want := s.base + int64(e.rel); h.lastOffset() != want {
			return fmt.Sprintf(".index entry at byte %d says last offset %d, batch has %d..%d", e.pos, want, h.baseOffset, h.lastOffset()), nil
		}
	}
	if len(tidx) == 0 && size > 0 {
		// Only a segment whose batches all lack timestamps has no entry.
		h, herr := headerAt(f, 0, size)
		if herr != nil || h.maxTimestamp >= 0 {
			return "empty .timeindex for a segment with timestamps", nil
		}
	}
	if n := len(tidx); n > 0 {
		e := tidx[n-1]
		want := s.base + int64(e.rel)
		_, h, found, ferr := s.findIn(f, idx, want, size)
		switch {
		case ferr != nil:
			return fmt.Sprintf(".timeindex entry for offset %d: %v", want, ferr), nil
		case !found || h.lastOffset() != want:
			return fmt.Sprintf(".timeindex entry for offset %d: no batch ends there", want), nil
		case h.maxTimestamp != e.ts:
			return fmt.Sprintf(".timeindex entry for offset %d has timestamp %d, batch %d", want, e.ts, h.maxTimestamp), nil
		}
	}
	return "", nil
}

// walkError classifies a header walk failure: an index read from disk may be
// at fault (rebuild and retry), a walk over trusted entries means the data is bad.
func (s *segment) walkError(trusted bool, err error) error {
	if !trusted {
		return fmt.Errorf("%w: segment %d: %v", errIndexSuspect, s.base, err)
	}
	return fmt.Errorf("%w: segment %d: %v", ErrCorruption, s.base, err)
}

// boundary returns the end of the last whole batch that keeps the view from
// start within maxBytes (but at least the first batch, of firstSize bytes).
func (s *segment) boundary(f *os.File, start, firstSize int64, maxBytes int, limit int64) (int64, error) {
	want := start + int64(maxBytes)
	if firstSize >= int64(maxBytes) || maxBytes <= 0 {
		return start + firstSize, nil
	}
	if want >= limit {
		return limit, nil
	}
	idx, _, trusted, err := s.indexes()
	if err != nil {
		return 0, err
	}
	pos := max(floorByPosition(idx, want), start+firstSize)
	for pos < limit {
		h, err := headerAt(f, pos, limit)
		if err != nil {
			if pos == start+firstSize {
				break // the rest is damaged; serve what precedes it
			}
			return 0, s.walkError(trusted, err)
		}
		if pos+h.size > want {
			break
		}
		pos += h.size
	}
	return pos, nil
}

// verify makes sure [start, end) holds batches with good CRCs and increasing
// offsets beginning with firstBase, reading whatever has not been checked
// before. It returns the end of the good prefix (== end when all is well).
func (s *segment) verify(f *os.File, start, end, firstBase int64) (int64, error) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if covered(s.verified, start, end) {
		return end, nil
	}
	var buf []byte
	pos, next := start, firstBase
	var bad error
	for pos < end {
		if c := coveredUntil(s.verified, pos); c > pos {
			// Already checked; the offset at its end is not known here.
			pos, next = min(c, end), math.MinInt64
			continue
		}
		h, err := headerAt(f, pos, end)
		if err == nil && next != math.MinInt64 && (h.baseOffset < next || h.baseOffset != next && !s.allowGaps()) {
			err = fmt.Errorf("base offset %d, expected %d", h.baseOffset, next)
		}
		if err == nil {
			if int64(cap(buf)) < h.size {
				buf = make([]byte, h.size)
			}
			buf = buf[:h.size]
			if _, err = f.ReadAt(buf, pos); err == nil {
				_, err = checkBatch(buf)
			}
		}
		if err != nil {
			bad = fmt.Errorf("batch at byte %d: %v", pos, err)
			break
		}
		next = h.lastOffset() + 1
		pos += h.size
	}
	if pos > start {
		s.verified = addSpan(s.verified, span{start, pos})
	}
	if bad != nil && pos == start {
		return start, fmt.Errorf("%w: segment %d: %v", ErrCorruption, s.base, bad)
	}
	return pos, nil
}

// markVerified records that [start, end) was written or checked by this process.
func (s *segment) markVerified(start, end int64) {
	if end <= start {
		return
	}
	s.vmu.Lock()
	s.verified = addSpan(s.verified, span{start, end})
	s.vmu.Unlock()
}

func covered(ss []span, start, end int64) bool {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].end > start })
	return i < len(ss) && ss[i].start <= start && ss[i].end >= end
}

// coveredUntil returns the end of the span containing pos, or pos.
func coveredUntil(ss []span, pos int64) int64 {
	i := sort.Search(len(ss), func(i int) bool { return ss[i].end > pos })
	if i < len(ss) && ss[i].start <= pos {
		return ss[i].end
	}
	return pos
}

func addSpan(ss []span, n span) []span {
	if k := len(ss); k > 0 && ss[k-1].start <= n.start && ss[k-1].end >= n.start && ss[k-1].end <= n.end {
		ss[k-1].end = n.end // the append path: extend the last span in place
		return ss
	}
	out := make([]span, 0, len(ss)+1)
	placed := false
	for _, s := range ss {
		switch {
		case s.end < n.start:
			out = append(out, s)
		case n.end < s.start:
			if !placed {
				out = append(out, n)
				placed = true
			}
			out = append(out, s)
		default:
			n = span{min(s.start, n.start), max(s.end, n.end)}
		}
	}
	if !placed {
		out = append(out, n)
	}
	return out
}

// largestTimestamp returns the segment's max batch timestamp (for retention
// and timestamp lookups), from the time index when possible.
func (s *segment) largestTimestamp() (int64, error) {
	if ts := s.maxTs.Load(); ts != math.MinInt64 {
		return ts, nil
	}
	_, tidx, _, err := s.indexes()
	if err != nil {
		return 0, err
	}
	ts := int64(-1)
	if n := len(tidx); n > 0 {
		ts = tidx[n-1].ts
	}
	s.maxTs.CompareAndSwap(math.MinInt64, ts)
	return s.maxTs.Load(), nil
}
