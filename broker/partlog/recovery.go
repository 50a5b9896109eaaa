package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
)

// Files besides the segments. Frozen names.
const (
	cleanShutdownFile = ".clean-shutdown"
	recoveryPointFile = "recovery-point"
)

func cleanShutdownPath(dir string) string { return filepath.Join(dir, cleanShutdownFile) }

// The recovery-point file holds the offset below which everything has been
// fsynced: offset int64 | crc32c uint32 of those 8 bytes, big-endian.
func readRecoveryPoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, recoveryPointFile))
	if err != nil || len(b) != 12 || crc32.Checksum(b[:8], castagnoli) != binary.BigEndian.Uint32(b[8:]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// setRecoveryPoint records that every offset below off is on disk. It only
// moves forward.
func (l *Log) setRecoveryPoint(off int64) {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	l.setRecoveryPointLocked(off)
}

func (l *Log) setRecoveryPointLocked(off int64) {
	if off <= l.recoveryPoint {
		return
	}
	if err := l.writeRecoveryPointLocked(off); err != nil {
		l.logger.Warn("write recovery point", "err", err)
	}
}

// writeRecoveryPointLocked replaces the recovery-point file (TruncateTo
// also moves it back); the caller holds rpMu.
func (l *Log) writeRecoveryPointLocked(off int64) error {
	b := binary.BigEndian.AppendUint64(nil, uint64(off))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := l.files.essential(func() error { return writeFileAtomic(filepath.Join(l.dir, recoveryPointFile), b) }); err != nil {
		return err
	}
	l.recoveryPoint = off
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// load builds the in-memory state from the directory. After a clean shutdown
// it reads only the active segment's index and the batch headers after its
// last entry. Otherwise every segment from the one holding the recovery point
// on is scanned with CRC checks, the log is cut at the first bad batch and
// the scanned segments' indexes are rebuilt.
func (l *Log) load() error {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(filepath.Join(l.dir, e.Name()))
			continue
		}
		names = append(names, e.Name())
	}
	if names, err = finishCleaning(l.dir, names); err != nil {
		return err
	}
	names, upgraded, err := migrateLegacySnapshots(l.dir, names)
	if err != nil {
		return fmt.Errorf("log: rename producer snapshots: %w", err)
	}
	clean := false
	if err := os.Remove(cleanShutdownPath(l.dir)); err == nil {
		clean = true
	} else if !os.IsNotExist(err) {
		return err
	}
	if !clean {
		// A clean shutdown synced everything: the checkpoint matters only
		// for recovery, and Close rewrites it.
		l.recoveryPoint = readRecoveryPoint(l.dir)
	}
	interval := int64(l.cfg.IndexIntervalBytes)
	epochsFromFile := false
	l.epochs, epochsFromFile = loadEpochCache(l.dir)

	var segs []*segment
	for _, base := range listOffsetFiles(names, logSuffix) {
		st, err := os.Stat(segmentPath(l.dir, base, logSuffix))
		if err != nil {
			return err
		}
		s := newSegmentStruct(l.dir, base, interval, l.files.newHandle(segmentPath(l.dir, base, logSuffix), nil), &l.gaps)
		s.size.Store(st.Size())
		segs = append(segs, s)
	}
	// Index files whose .log is gone (a crash during retention) go too.
	haveLog := make(map[int64]bool, len(segs))
	for _, s := range segs {
		haveLog[s.base] = true
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		for _, base := range listOffsetFiles(names, suf) {
			if !haveLog[base] {
				os.Remove(segmentPath(l.dir, base, suf))
			}
		}
	}
	l.segs.Store(&segs)

	if len(segs) == 0 {
		s, err := createSegment(l.dir, 0, interval, l.cfg.Now(), l.files, useOrdinary, &l.gaps)
		if err != nil {
			return err
		}
		segs = []*segment{s}
		l.segs.Store(&segs)
	} else if !clean {
		if err := l.recover(segs); err != nil {
			return err
		}
	} else if err := l.openActiveClean(segs[len(segs)-1]); err != nil {
		l.logger.Warn("active segment inconsistent after clean shutdown; recovering it", "err", err)
		if err := l.recover(segs[len(segs)-1:]); err != nil {
			return err
		}
	}
	segs = *l.segs.Load()
	active := segs[len(segs)-1]
	// The active segment must open now, so that a partition that cannot
	// (out of descriptors) fails here, to the caller, not at its first append.
	if _, err := active.openFile(useOrdinary); err != nil {
		return err
	}
	active.file.release()
	active.created = l.cfg.Now() // the roll clock restarts at open
	l.active = active
	l.start.Store(loadedStart(l.dir, segs[0].base, active.next))
	l.end.Store(active.next)
	if upgraded {
		l.migrateIndexes(segs[:len(segs)-1])
	}
	if clean {
		// The last Close wrote this point; TruncateTo must know it to move it back.
		l.recoveryPoint = max(l.recoveryPoint, active.next)
	}
	if err := l.finishEpochLoad(epochsFromFile); err != nil {
		return err
	}
	return l.loadProducers(names)
}

// migrateIndexes runs once, on the first Open of a directory written by an
// older version (it had legacy snapshot names): sealed segments whose index
// files follow the older convention are rebuilt now rather than at their
// first use, so Kafka's tools read every file right. A failure is only
// logged: the first use of the segment checks its files again.
func (l *Log) migrateIndexes(sealed []*segment) {
	for _, s := range sealed {
		if err := s.migrateIndexes(); err != nil {
			l.logger.Warn("checking index files of an older version", "segment", s.base, "err", err)
		}
	}
}

// openActiveClean finds the end of the active segment from its last index
// entry after a clean shutdown.
func (l *Log) openActiveClean(s *segment) error {
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return err
	}
	defer s.file.release()
	idx, tidx, _, err := s.indexes()
	if err != nil {
		return err
	}
	size := s.size.Load()
	// The walk starts at the last .index entry's batch (inside the file, as
	// decoding checked), which ends at the entry's offset. The last
	// .timeindex entry, written at Close, holds the largest timestamp.
	var pos int64
	next, maxTs, maxTsOffset := s.base, int64(-1), s.base
	expectLast := int64(-1)
	if n := len(idx); n > 0 {
		pos, next, expectLast = int64(idx[n-1].pos), -1, s.base+int64(idx[n-1].rel)
		s.lastIndexedPos = pos
	}
	if n := len(tidx); n > 0 {
		maxTs, maxTsOffset = tidx[n-1].ts, s.base+int64(tidx[n-1].rel)
	}
	for pos < size {
		h, err := headerAt(f, pos, size)
		if err == nil && next >= 0 && (h.baseOffset < next || h.baseOffset != next && !s.allowGaps()) {
			err = fmt.Errorf("batch at byte %d has base offset %d, want %d", pos, h.baseOffset, next)
		}
		if err == nil && expectLast >= 0 && h.lastOffset() != expectLast {
			err = fmt.Errorf("batch at byte %d has last offset %d, want %d", pos, h.lastOffset(), expectLast)
		}
		if err != nil {
			return err
		}
		if h.maxTimestamp > maxTs {
			maxTs, maxTsOffset = h.maxTimestamp, h.lastOffset()
		}
		next, expectLast = h.lastOffset()+1, -1
		pos += h.size
	}
	s.next = next
	s.maxTs.Store(maxTs)
	s.maxTsOffset = maxTsOffset
	s.idxTrusted = false
	return nil
}

// recover scans segs (a suffix of the log) from the one holding the
// recovery point.
func (l *Log) recover(segs []*segment) error {
	all := *l.segs.Load()
	first := 0
	for i, s := range segs {
		if s.base <= l.recoveryPoint {
			first = i
		}
	}
	l.logger.Info("recovering log after unclean shutdown", "from_segment", segs[first].base, "segments", len(segs)-first)
	// The checkpoint may be ahead of or behind the unsynced tail; the
	// scanned batches decide.
	l.epochs.truncateFromEnd(segs[first].base)
	for i := first; i < len(segs); i++ {
		s := segs[i]
		f, err := s.openFile(useEssential)
		if err != nil {
			return err
		}
		res, err := scanSegment(f, s.base, s.size.Load(), s.interval, true, s.allowGaps(), func(h batchHeader) { l.epochs.observe(h) })
		if err != nil {
			s.file.release()
			return fmt.Errorf("log: recover segment %d: %w", s.base, err)
		}
		// The cache may close f once released; recovery truncates through it below.
		err = l.recoverSegment(s, f, segs, i, all, res)
		s.file.release()
		if err == errStopRecovery {
			break
		}
		if err != nil {
			return err
		}
	}
	return l.finishRecovery()
}

// errStopRecovery: recoverSegment cut the log; later segments are gone.
var errStopRecovery = errors.New("log: recovery cut the log")

// recoverSegment applies one scanned segment's result: its indexes, and a
// cut at the first bad batch (dropping every later segment).
func (l *Log) recoverSegment(s *segment, f *os.File, segs []*segment, i int, all []*segment, res scanResult) error {
	if err := l.files.essential(func() error { return s.writeIndexFiles(res.idx, res.tidx) }); err != nil {
		return err
	}
	s.idxMu.Lock()
	s.idx, s.tidx, s.idxLoaded, s.idxTrusted = res.idx, res.tidx, true, true
	s.idxMu.Unlock()
	s.maxTs.Store(res.maxTs)
	s.maxTsOffset = res.maxTsOffset
	s.next = res.next
	if n := len(res.idx); n > 0 {
		s.lastIndexedPos = int64(res.idx[n-1].pos)
	}
	s.markVerified(0, res.validEnd)
	if res.badErr == nil && (i+1 == len(segs) || segs[i+1].base >= res.next) {
		return nil
	}
	// Cut here: drop the damaged tail and every later segment.
	why := res.badErr
	if why == nil {
		why = fmt.Errorf("next segment %d overlaps offsets up to %d", segs[i+1].base, res.next-1)
	}
	l.logger.Warn("truncating log at first bad batch", "segment", s.base, "position", res.validEnd,
		"dropped_bytes", s.size.Load()-res.validEnd, "dropped_segments", len(segs)-i-1, "reason", why)
	if err := f.Truncate(res.validEnd); err != nil {
		return err
	}
	s.size.Store(res.validEnd)
	if err := f.Sync(); err != nil {
		return err
	}
	for _, later := range segs[i+1:] {
		if err := later.remove(); err != nil {
			return err
		}
		later.release()
	}
	keep := all[:len(all)-(len(segs)-i-1)]
	l.segs.Store(&keep)
	return errStopRecovery
}

// finishRecovery makes the scanned tail, now known good, durable so the
// next recovery can start after it.
func (l *Log) finishRecovery() error {
	cur := *l.segs.Load()
	last := cur[len(cur)-1]
	if err := l.syncSegment(last); err != nil && !errors.Is(err, errSegmentGone) {
		return err
	}
	if err := l.files.essential(func() error { return syncDir(l.dir) }); err != nil {
		return err
	}
	l.setRecoveryPoint(last.next)
	return nil
}

// loadProducers restores idempotence state from the newest snapshot and the
// batch headers after it. Without a usable snapshot (none, or older than
// the log start) the headers are read from the log start, as Kafka
// rebuilds its producer state: a transaction begun in any segment is
// still ongoing, and its marker completes it with its first offset. Only
// batch headers are read, one per batch; snapshots are written at every
// roll and Close, so a log without one is rare (written by an older
// version, or a crash before its first roll reached the disk).
//
// Headers carry no append time, so a batch read back from a segment counts
// as appended at the segment file's modification time (capped at Now): never
// earlier than it really was, so no producer is forgotten early, at the cost
// of keeping one that shares a segment with later writes a little longer.
// Producers already expired or below the log start offset are then dropped,
// so a snapshot written before they expired does not bring them back.
//
// Transactions are rebuilt by the same replay: the snapshot carries each
// producer's ongoing transaction, and the markers replayed complete them
// and rebuild the aborted-transaction index of the replayed segments
// (their .txnindex files are rewritten). A snapshot at offset X is only
// ever written after the batches below X and their .txnindex entries
// were fsynced (at a roll, Close or TruncateTo), so the files' entries
// below X are complete; without a snapshot every segment's .txnindex is
// rebuilt.
func (l *Log) loadProducers(names []string) error {
	end := l.end.Load()
	nowMs := l.cfg.Now().UnixMilli()
	ps, from, ok := loadSnapshot(l.dir, names, end, l.cfg.producerExpireMs(), nowMs)
	l.producers = ps
	segs := *l.segs.Load()
	if !ok || from < segs[0].base {
		from = segs[0].base
	}
	l.loadTxnIndexes(names, segs, from)
	defer func() {
		ps.removeStale(nowMs, l.start.Load())
		l.publishTxn()
	}()
	if from >= end {
		return nil
	}
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		f, err := s.openFile(useEssential)
		if err != nil {
			return err
		}
		appendMs := nowMs
		if st, err := f.Stat(); err == nil {
			appendMs = min(appendMs, st.ModTime().UnixMilli())
		}
		tmp := map[int64]*producerEntry{}
		_, err = scanSegment(f, s.base, s.size.Load(), s.interval, false, s.allowGaps(), func(h batchHeader) {
			if h.baseOffset >= from && h.producerID >= 0 {
				d, done := update(tmp, ps, h, appendMs)
				ps.apply(tmp)
				clear(tmp)
				if done {
					l.recordTxns([]completedTxn{d})
				}
			}
		})
		s.file.release()
		if err != nil {
			return err
		}
	}
	return l.writeTxnIndexesFrom(segs, from)
}
