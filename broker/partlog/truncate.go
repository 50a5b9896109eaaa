package partlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"
)

// TruncateTo drops every record at or after offset, which must be a batch
// boundary with StartOffset() <= offset <= EndOffset() (ErrOffsetOutOfRange
// or ErrNotBatchBoundary otherwise, and nothing changes); offset ==
// EndOffset() does nothing. A follower calls it to cut a divergent tail.
//
// Segments from offset on are deleted, the segment containing offset is cut
// at that batch (its indexes rebuilt) and sealed, and a new active segment
// starts at offset: new bytes never go where dropped ones were, so a View
// taken before the call either still reads the old bytes (a deleted segment
// stays open until released) or fails (positions cut off the containing
// segment now read short, and Bytes or SendTo return an error) — it never
// mixes in new batches. Reads starting after TruncateTo returns never see
// the dropped bytes. The producer state is rebuilt from the newest snapshot
// at or below offset and the batches after it, the leader epoch cache is
// cut at offset, and the recovery point moves back to offset. Everything is
// fsynced before it returns, so a crash afterwards cannot bring the dropped
// bytes back.
//
// If it fails half way, the Log refuses further appends and truncations
// (the error says so) and is not marked cleanly shut down by Close, so the
// next Open recovers it from the files.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.broken != nil {
		return l.broken
	}
	start, end := l.start.Load(), l.end.Load()
	if offset < start || offset > end {
		return fmt.Errorf("%w: truncate to %d outside [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if offset == end {
		return nil
	}
	segs := *l.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		return fmt.Errorf("%w: no segment holds offset %d", ErrOffsetOutOfRange, offset)
	}
	cut := segs[i] // the segment holding offset; dropped whole when offset is its base
	var pos int64
	if cut.base < offset {
		var err error
		if pos, err = l.batchPosition(cut, offset); err != nil {
			return err
		}
	}

	// A roll's background sync still running would write a snapshot and
	// raise the recovery point past the cut.
	<-l.lastRollDone
	// The recovery point goes back first: whatever happens next, recovery
	// rescans from the cut. Flushes begun before see the new generation
	// and leave the point alone.
	l.rpMu.Lock()
	l.truncations.Add(1) // odd while the cut is under way
	defer l.truncations.Add(1)
	var err error
	if offset < l.recoveryPoint {
		err = l.writeRecoveryPointLocked(offset)
	}
	l.rpMu.Unlock()
	if err != nil {
		return fmt.Errorf("log: truncate to %d: recovery point: %w", offset, err)
	}

	if err := l.truncate(segs, i, pos, offset); err != nil {
		l.broken = fmt.Errorf("%w: truncation to %d failed half way, reopen the log: %w", ErrCorruption, offset, err)
		l.logger.Error("truncation failed; the log needs recovery", "offset", offset, "err", err)
		return l.broken
	}
	l.cleanerTruncated(offset)
	l.logger.Info("truncated log", "offset", offset, "dropped_records", end-offset, "dropped_segments", len(segs)-1-i)
	return nil
}

// truncate does TruncateTo's work past its checks: segs[i] is cut at pos
// (dropped when pos is 0) and the segments after it deleted.
func (l *Log) truncate(segs []*segment, i int, pos, offset int64) error {
	now := l.cfg.Now()
	nowMs := now.UnixMilli()

	// Epoch cache and end offset move together (see EndOffsetForEpoch).
	// From here on reads past offset see nothing.
	ec := l.epochs
	ec.mu.Lock()
	ec.truncateFromEndLocked(offset)
	l.end.Store(offset)
	ec.mu.Unlock()
	if err := l.files.essential(ec.persist); err != nil {
		return err
	}

	// Producer state: the newest snapshot at or below offset (newer ones,
	// which describe dropped batches, are deleted by loadSnapshot), then the
	// batches from it up to offset.
	names, err := listDirNames(l.dir)
	if err != nil {
		return err
	}
	ps, from, ok := loadSnapshot(l.dir, names, offset, l.cfg.producerExpireMs(), nowMs)
	if !ok || from < l.start.Load() {
		from = l.start.Load()
	}
	// The aborted-transaction index is rebuilt by the same replay.
	l.dropAbortedFrom(from)
	replay := func(appendMs int64) func(batchHeader) {
		tmp := map[int64]*producerEntry{}
		return func(h batchHeader) {
			if h.baseOffset >= from && h.baseOffset < offset && h.producerID >= 0 {
				d, done := update(tmp, ps, h, appendMs)
				ps.apply(tmp)
				clear(tmp)
				if done {
					l.recordTxns([]completedTxn{d})
				}
			}
		}
	}
	for k := 0; k < i; k++ {
		s := segs[k]
		if segs[k+1].base <= from {
			continue
		}
		if err := l.scanKept(s, s.size.Load(), nowMs, replay); err != nil {
			return err
		}
	}

	dropped := segs[i+1:]
	kept := append([]*segment(nil), segs[:i]...)
	if pos == 0 {
		dropped = segs[i:]
	} else {
		if err := l.cutSegment(segs[i], pos, offset, nowMs, replay); err != nil {
			return err
		}
		kept = append(kept, segs[i])
	}
	ps.removeStale(nowMs, l.start.Load())
	l.producers = ps
	l.publishTxn()
	if pos > 0 {
		cut := segs[i]
		aborted := l.abortedIn(cut.base, offset)
		if err := l.files.essential(func() error { return writeTxnIndex(l.dir, cut.base, aborted) }); err != nil {
			return err
		}
	}
	// Open without a snapshot would read only the new, empty active
	// segment; this one keeps the rebuilt state across a crash.
	if err := l.files.essential(func() error { return ps.writeSnapshot(l.dir, offset) }); err != nil {
		return err
	}
	pruneSnapshots(l.dir)

	return l.replaceSegments(kept, dropped, offset, now)
}

// replaceSegments removes dropped, starts a new active segment at offset
// after kept and makes the directory change durable. The dropped files go
// before the new segment is created: it may take the name of the first of
// them.
func (l *Log) replaceSegments(kept, dropped []*segment, offset int64, now time.Time) error {
	var errs []error
	for _, s := range dropped {
		errs = append(errs, s.remove())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ns, err := createSegment(l.dir, offset, int64(l.cfg.IndexIntervalBytes), now, l.files, useEssential, &l.gaps)
	if err != nil {
		return err
	}
	segs := append(kept, ns) // kept is the caller's own slice
	l.segs.Store(&segs)
	l.active = ns
	for _, s := range dropped {
		s.release() // open Views keep reading the unlinked files until released
	}
	// The unlinks, the new segment and any snapshots removed must survive
	// a crash.
	return l.files.essential(func() error { return syncDir(l.dir) })
}

// cutSegment truncates s, which holds offset at byte pos, to pos: indexes
// rebuilt by a walk of what stays (feeding the producer replay), the file
// cut and fsynced. s is sealed afterwards.
func (l *Log) cutSegment(s *segment, pos, offset, nowMs int64, replay func(int64) func(batchHeader)) error {
	f, err := s.openFile(useEssential)
	if err != nil {
		return err
	}
	defer s.file.release()
	res, err := scanSegment(f, s.base, pos, s.interval, false, s.allowGaps(), replay(appendTime(f, nowMs)))
	if err != nil {
		return err
	}
	// Below offset when it lies in a gap the cleaner left.
	if res.badErr != nil || res.validEnd != pos || res.next > offset {
		return fmt.Errorf("%w: segment %d: walk to byte %d ends at byte %d, offset %d (%v)",
			ErrCorruption, s.base, pos, res.validEnd, res.next, res.badErr)
	}
	// Readers see the new size before the file shrinks, so new reads stay
	// inside it; reads already past pos get short reads, not other bytes.
	s.size.Store(pos)
	s.idxMu.Lock()
	s.idx, s.tidx, s.idxLoaded, s.idxTrusted = res.idx, res.tidx, true, true
	s.idxMu.Unlock()
	s.maxTs.Store(res.maxTs)
	s.maxTsOffset = res.maxTsOffset
	s.next = offset
	s.vmu.Lock()
	s.verified = trimSpans(s.verified, pos)
	s.vmu.Unlock()
	if err := f.Truncate(pos); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return l.files.essential(func() error { return s.writeIndexFiles(res.idx, res.tidx) })
}

// scanKept replays a kept segment's batches into the producer state.
func (l *Log) scanKept(s *segment, limit, nowMs int64, replay func(int64) func(batchHeader)) error {
	f, err := s.openFile(useEssential)
	if err != nil {
		return err
	}
	defer s.file.release()
	_, err = scanSegment(f, s.base, limit, s.interval, false, s.allowGaps(), replay(appendTime(f, nowMs)))
	return err
}

// batchPosition returns the byte position in s of the batch whose base
// offset is offset, ErrNotBatchBoundary if offset falls inside a batch.
// The caller holds l.mu (an index rebuild may touch the active segment).
func (l *Log) batchPosition(s *segment, offset int64) (int64, error) {
	for try := 0; ; try++ {
		f, err := s.openFile(useEssential)
		if err != nil {
			return 0, err
		}
		pos, h, found, err := s.find(f, offset, s.size.Load())
		s.file.release()
		if err != nil && try == 0 && errors.Is(err, errIndexSuspect) {
			if rerr := s.rebuildIndexes(err.Error()); rerr != nil {
				return 0, rerr
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		if !found {
			// Every batch of s ends below offset: it lies in a gap the
			// cleaner left at the segment's end; s stays whole.
			return s.size.Load(), nil
		}
		if h.baseOffset < offset || h.baseOffset > offset && !s.allowGaps() { // past it: offset is in a gap the cleaner left
			return 0, fmt.Errorf("%w: offset %d is inside the batch %d..%d", ErrNotBatchBoundary, offset, h.baseOffset, h.lastOffset())
		}
		return pos, nil
	}
}

// appendTime is when batches re-read from f count as appended, as in
// loadProducers: the file's modification time, capped at now.
func appendTime(f *os.File, nowMs int64) int64 {
	if st, err := f.Stat(); err == nil {
		return min(nowMs, st.ModTime().UnixMilli())
	}
	return nowMs
}

func trimSpans(ss []span, end int64) []span {
	out := ss[:0]
	for _, s := range ss {
		if s.start >= end {
			break
		}
		s.end = min(s.end, end)
		out = append(out, s)
	}
	return out
}

func listDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// truncationRaced reports whether a read that began at truncation
// generation gen and failed may have had its bytes cut under it; if so it
// waits for the truncation to finish, so that a retry sees the new state.
func (l *Log) truncationRaced(gen int64) bool {
	if gen%2 == 0 && l.truncations.Load() == gen {
		return false
	}
	l.mu.Lock()
	// An empty critical section: TruncateTo holds l.mu until it is done.
	l.mu.Unlock()
	return true
}

// setRecoveryPointUnlessTruncated is setRecoveryPoint for a Flush that
// read the end offset at truncation generation gen: after a TruncateTo, that
// end may cover bytes written since and never synced.
func (l *Log) setRecoveryPointUnlessTruncated(off, gen int64) {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	if l.truncations.Load() != gen {
		return
	}
	l.setRecoveryPointLocked(off)
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, which
// becomes both its start and end offset (Kafka's truncateFullyAndStartAt):
// for a follower whose fetch offset is out of the leader's range, e.g. a new
// replica of a partition whose first segments retention already deleted.
// Every segment, producer snapshot and epoch is dropped; Views taken before
// keep reading the deleted files until released. Durable before it
// returns, like TruncateTo.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.broken != nil {
		return l.broken
	}
	<-l.lastRollDone
	l.rpMu.Lock()
	l.truncations.Add(1)
	defer l.truncations.Add(1)
	// Nothing below offset exists: recovery starts there.
	err := l.writeRecoveryPointLocked(offset)
	l.rpMu.Unlock()
	if err != nil {
		return fmt.Errorf("log: restart at %d: recovery point: %w", offset, err)
	}
	if err := l.restartAt(offset); err != nil {
		l.broken = fmt.Errorf("%w: restart at %d failed half way, reopen the log: %w", ErrCorruption, offset, err)
		l.logger.Error("restart failed; the log needs recovery", "offset", offset, "err", err)
		return l.broken
	}
	l.cleanerTruncated(offset)
	l.logger.Info("emptied log and restarted it", "offset", offset)
	return nil
}

func (l *Log) restartAt(offset int64) error {
	now := l.cfg.Now()
	ec := l.epochs
	ec.mu.Lock()
	ec.entries, ec.dirty = nil, true
	l.end.Store(offset)
	ec.mu.Unlock()
	l.start.Store(offset)
	if err := l.files.essential(ec.persist); err != nil {
		return err
	}
	names, err := listDirNames(l.dir)
	if err != nil {
		return err
	}
	for _, off := range listOffsetFiles(names, snapshotSuffix) {
		if err := os.Remove(snapshotPath(l.dir, off)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	l.producers = newProducerState(l.cfg.producerExpireMs())
	l.publishTxn()
	l.dropAbortedFrom(math.MinInt64)
	return l.replaceSegments(nil, *l.segs.Load(), offset, now)
}
