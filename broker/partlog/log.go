package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Log is one topic partition: a directory of segments. It is safe for
// concurrent use; Append calls are serialized, Read runs alongside them.
type Log struct {
	dir    string
	cfg    Config
	logger *slog.Logger

	segs  atomic.Pointer[[]*segment] // sorted by base offset; copy on write
	start atomic.Int64
	end   atomic.Int64
	shut  atomic.Bool

	mu        sync.Mutex // appends, rolls, retention, close
	closed    bool
	broken    error // a truncation failed half way; see truncate.go
	active    *segment
	producers *producerState
	unflushed int64 // records appended since the last flush
	scratch   []batchHeader
	files     *FileCache // segment files open on use; shared by the broker's Logs

	rpMu          sync.Mutex // the recovery-point file
	recoveryPoint int64

	// Transactions (txn.go): the first offset of the oldest ongoing
	// transaction (-1: none), published after each append; the aborted
	// transactions by marker offset, all segments', guarded by txnMu;
	// the transactions completed by a marker the high watermark has not
	// passed yet (by marker offset; see LastStableOffset), guarded by
	// unrepMu.
	firstUnstable atomic.Int64
	txnMu         sync.RWMutex
	aborted       []AbortedTxn
	unrepMu       sync.Mutex
	unreplicated  []txnSpan

	epochs  *epochCache  // leader epochs of the batches; see epoch.go
	cleaner cleanerState // the log cleaner's checkpoint and lock; see cleaner.go
	// gaps: segments may have offset gaps (the cleaner ran, or a follower
	// took a compacted leader's batches); see allowGaps.
	gaps atomic.Bool
	// truncations is a generation, odd while a TruncateTo cuts files and
	// bumped under rpMu: a Flush that started before a cut must not raise
	// the recovery point over bytes written after it, and a Read that
	// failed while one ran retries.
	truncations atomic.Int64

	// lastRollDone is closed when the most recent roll's background sync
	// has finished.
	lastRollDone chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup // flush loop and roll syncs
}

// AppendResult describes where Append put a batch (or, for a duplicate,
// where the original went).
type AppendResult struct {
	BaseOffset, LastOffset int64
	MaxTimestamp           int64 // from the batch header
	LogStartOffset         int64
	Duplicate              bool // idempotent retry of an already-appended batch: nothing written, offsets are the original ones
}

// Open opens the partition log in dir ("<topic>-<partition>"), creating the
// directory if needed and recovering after an unclean stop.
func Open(dir string, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, cfg: cfg, logger: cfg.Logger.With("log", dir), files: cfg.Files,
		stop: make(chan struct{}), lastRollDone: make(chan struct{})}
	l.firstUnstable.Store(-1)
	if l.files == nil {
		l.files = NewFileCache(DefaultMaxOpenFiles, 0)
	}
	close(l.lastRollDone)
	if _, err := os.Stat(cleanerCheckpointPath(dir)); err == nil {
		l.gaps.Store(true)
	}
	if err := l.load(); err != nil {
		l.releaseAll()
		if isNoDescriptors(err) && !errors.Is(err, ErrNoDescriptors) {
			l.files.failures.Add(1)
			err = fmt.Errorf("%w: opening %s: %w", ErrNoDescriptors, dir, err)
		}
		return nil, err
	}
	if cfg.FlushInterval > 0 {
		l.wg.Add(1)
		go l.flushLoop()
	}
	return l, nil
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset returns the log start offset (the first offset still stored).
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset returns the log end offset: the offset the next record gets.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// Size returns the bytes held in segment files.
func (l *Log) Size() int64 {
	var total int64
	for _, s := range *l.segs.Load() {
		total += s.size.Load()
	}
	return total
}

// Append validates one or more concatenated magic-2 record batches and
// appends them with consecutive offsets: all or nothing. The assigned base
// offsets are written into batch itself (bytes 0..8 of each batch). An
// idempotent retry of one of a producer's last five batches writes nothing
// and returns the original offsets with Duplicate set; if several batches
// are given and one is such a retry, none is written (as Kafka does).
//
// Transactional batches (attribute bit 4) need a producer id and open or
// continue the producer's transaction; control batches are refused
// (ErrInvalidRecord): markers go through AppendMarker.
func (l *Log) Append(batch []byte) (AppendResult, error) {
	return l.appendBatches(batch, false)
}

// appendBatches is Append; control allows control batches (AppendMarker).
func (l *Log) appendBatches(batch []byte, control bool) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendResult{}, ErrClosed
	}
	hs, err := validateBatches(batch, l.scratch[:0], false)
	l.scratch = hs[:0]
	if err != nil {
		return AppendResult{}, err
	}

	now := l.cfg.Now()
	nowMs := now.UnixMilli()
	var overlay map[int64]*producerEntry
	var done []completedTxn
	next := l.active.next
	var maxTs int64 = -1
	var records int64
	for i := range hs {
		h := &hs[i]
		if !control {
			if err := checkClientBatch(*h); err != nil {
				return AppendResult{}, err
			}
		}
		if h.producerID >= 0 {
			dup, err := l.producers.check(overlay, *h, nowMs)
			if err != nil {
				return AppendResult{}, err
			}
			if dup != nil {
				return AppendResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, MaxTimestamp: dup.maxTs,
					LogStartOffset: l.start.Load(), Duplicate: true}, nil
			}
		}
		h.baseOffset = next
		if h.producerID >= 0 {
			if overlay == nil {
				overlay = map[int64]*producerEntry{}
			}
			if d, ok := update(overlay, l.producers, *h, nowMs); ok {
				done = append(done, d)
			}
		}
		next += int64(h.lastOffsetDelta) + 1
		maxTs = max(maxTs, h.maxTimestamp)
		records += int64(h.recordCount)
	}
	if err := l.commit(batch, hs, overlay, done, next, maxTs, records, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: hs[0].baseOffset, LastOffset: next - 1, MaxTimestamp: maxTs, LogStartOffset: l.start.Load()}, nil
}

// commit writes validated batches whose offsets are set in hs (next is the
// offset after the last) and applies their producer state (overlay) and
// leader epochs: the common tail of Append and AppendReplica. The caller
// holds l.mu.
func (l *Log) commit(batch []byte, hs []batchHeader, overlay map[int64]*producerEntry, done []completedTxn, next, maxTs, records int64, now time.Time) error {
	if l.broken != nil {
		return l.broken
	}
	if l.shouldRoll(int64(len(batch)), next-1, now) {
		if err := l.roll(now, hs[0].baseOffset); err != nil {
			return err
		}
	}
	if err := l.observeEpochs(hs); err != nil {
		return err
	}
	if err := l.write(batch, hs, maxTs); err != nil {
		l.undoEpochs(hs[0].baseOffset)
		return err
	}
	l.active.next = next
	l.end.Store(next)
	if overlay != nil {
		l.producers.apply(overlay)
		l.recordTxns(done)
		l.publishTxn()
	}

	l.unflushed += records
	if l.cfg.FlushIntervalMessages > 0 && l.unflushed >= l.cfg.FlushIntervalMessages {
		if err := l.flushLocked(); err != nil {
			// The batch is written; only its durability is in doubt.
			l.logger.Error("flush after append failed", "err", err)
		}
	}
	return nil
}

func (l *Log) shouldRoll(n, lastOffset int64, now time.Time) bool {
	s := l.active
	size := s.size.Load()
	if size == 0 {
		return false
	}
	return size+n > l.cfg.SegmentBytes ||
		now.Sub(s.created) >= l.cfg.SegmentMs ||
		lastOffset-s.base > math.MaxUint32 ||
		size+n > math.MaxUint32
}

// write puts the validated batches at the end of the active segment with
// their index entries; on failure it leaves the files as they were.
func (l *Log) write(batch []byte, hs []batchHeader, maxTs int64) error {
	s := l.active
	pos := s.size.Load()
	ix := s.writerIndexer(false)
	p := pos
	for _, h := range hs {
		binary.BigEndian.PutUint64(batch[p-pos:], uint64(h.baseOffset))
		ix.add(p, h)
		p += h.size
	}

	f, err := s.openFile(useOrdinary)
	if err != nil {
		return fmt.Errorf("log: append to segment %d: %w", s.base, err)
	}
	defer s.file.release()
	if _, err := f.WriteAt(batch, pos); err != nil {
		if terr := f.Truncate(pos); terr != nil {
			l.logger.Error("cannot undo a failed append", "segment", s.base, "err", terr)
		}
		return fmt.Errorf("log: append to segment %d: %w", s.base, err)
	}
	s.commitIndexer(ix)
	s.maxTs.Store(max(ix.maxTs, maxTs))
	s.markVerified(pos, p)
	s.size.Store(p)
	return nil
}

// sealActive adds the active segment's closing time-index entry and
// returns a write of both index files, which the caller runs (the entries
// no longer change once the segment is sealed).
func (l *Log) sealActive() (writeIndexes func() error) {
	s := l.active
	s.idxMu.Lock()
	s.sealTimeIndexLocked()
	idx, tidx := s.idx, s.tidx
	s.idxMu.Unlock()
	return func() error {
		return l.files.essential(func() error { return s.writeIndexFiles(idx, tidx) })
	}
}

// syncSegment fsyncs a segment's .log file, reopening it if the cache
// closed it (fsync flushes the file's pages whichever descriptor wrote them).
func (l *Log) syncSegment(s *segment) error {
	f, err := s.file.acquire(useEssential)
	if err != nil {
		return err
	}
	defer s.file.release()
	return f.Sync()
}

// roll seals the active segment and starts a new one at base: the end
// offset, or past it when a follower's next batch follows a gap the
// leader's cleaner left (the sealed segment then ends in that gap). The
// old segment is fsynced in the background, as Kafka does, so an append
// never waits for a whole segment to reach the disk; the recovery point
// moves past it only once that sync is done, in roll order.
func (l *Log) roll(now time.Time, base int64) error {
	old := l.active
	s, err := createSegment(l.dir, base, old.interval, now, l.files, useEssential, &l.gaps)
	if err != nil {
		return fmt.Errorf("log: roll: %w", err)
	}
	writeIndexes := l.sealActive()
	segs := *l.segs.Load()
	ns := make([]*segment, len(segs), len(segs)+1)
	copy(ns, segs)
	ns = append(ns, s)
	l.segs.Store(&ns)
	l.active = s
	// Expired producers are dropped before the snapshot, so that a
	// recovery from it cannot bring them back.
	l.producers.removeStale(now.UnixMilli(), l.start.Load())
	snapshot := l.producers.encode()
	aborted := l.abortedIn(old.base, s.base)

	old.acquire() // the background sync's reference
	prev, done := l.lastRollDone, make(chan struct{})
	l.lastRollDone = done
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(done)
		defer old.release()
		err := errors.Join(l.syncSegment(old), writeIndexes(),
			l.files.essential(func() error { return writeTxnIndex(l.dir, old.base, aborted) }))
		// Snapshots in roll order: one at offset X means every .txnindex
		// below X is written (recovery relies on it, see loadProducers).
		<-prev
		err = errors.Join(err, l.files.essential(func() error { return writeFileAtomic(snapshotPath(l.dir, s.base), snapshot) }),
			l.files.essential(func() error { return syncDir(l.dir) }))
		pruneSnapshots(l.dir)
		if err != nil {
			l.logger.Error("sync of rolled segment failed", "segment", old.base, "err", err)
			return
		}
		l.setRecoveryPoint(s.base)
	}()
	l.logger.Debug("rolled segment", "base", s.base)
	return nil
}

// Flush fsyncs the active segment and advances the recovery checkpoint, so
// that recovery after a crash starts no earlier than here. Appends continue
// while the sync runs.
func (l *Log) Flush() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	s, end, rolled, gen := l.active, l.end.Load(), l.lastRollDone, l.truncations.Load()
	l.unflushed = 0
	if !s.acquire() {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.Unlock()
	defer s.release()
	if err := l.syncSegment(s); err != nil {
		return fmt.Errorf("log: flush: %w", err)
	}
	<-rolled // earlier segments must be on disk before the checkpoint passes them
	l.setRecoveryPointUnlessTruncated(end, gen)
	return nil
}

func (l *Log) flushLocked() error {
	l.unflushed = 0
	if err := l.syncSegment(l.active); err != nil {
		return err
	}
	<-l.lastRollDone
	l.setRecoveryPoint(l.end.Load())
	return nil
}

// flushLoop implements FlushInterval: a goroutine per Log, stopped by Close.
func (l *Log) flushLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			pending := l.unflushed > 0 && !l.closed
			l.mu.Unlock()
			if pending {
				if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) {
					l.logger.Error("periodic flush failed", "err", err)
				}
			}
		}
	}
}

// Close syncs the log, writes the producer snapshot, the recovery point and
// the clean-shutdown marker. Views still held stay readable until released.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.shut.Store(true)
	close(l.stop)
	l.mu.Unlock()
	l.wg.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	errs = append(errs, l.syncSegment(l.active), l.sealActive()())
	end := l.end.Load()
	if l.broken == nil {
		aborted := l.abortedIn(l.active.base, math.MaxInt64)
		errs = append(errs, l.files.essential(func() error { return writeTxnIndex(l.dir, l.active.base, aborted) }))
	}
	l.producers.removeStale(l.cfg.Now().UnixMilli(), l.start.Load())
	if l.broken == nil { // else the state may not match the files; recovery rebuilds it
		errs = append(errs, l.files.essential(func() error { return l.producers.writeSnapshot(l.dir, end) }))
	}
	pruneSnapshots(l.dir)
	errs = append(errs, l.files.essential(l.epochs.persist))
	l.setRecoveryPoint(end)
	if err := errors.Join(errs...); err == nil && l.broken == nil {
		// Only a fully synced log may skip recovery next time.
		errs = append(errs, l.files.essential(func() error {
			return errors.Join(writeFileAtomic(cleanShutdownPath(l.dir), nil), syncDir(l.dir))
		}))
	}
	l.releaseAll()
	return errors.Join(errs...)
}

func (l *Log) releaseAll() {
	if p := l.segs.Load(); p != nil {
		for _, s := range *p {
			s.release()
		}
	}
}

// Delete closes the log and removes its directory (DeleteTopics).
func (l *Log) Delete() error {
	l.mu.Lock()
	alreadyClosed := l.closed
	l.mu.Unlock()
	if !alreadyClosed {
		if err := l.Close(); err != nil {
			l.logger.Warn("close before delete", "err", err)
		}
	}
	return os.RemoveAll(l.dir)
}

// Read returns a View of whole batches starting with the one that contains
// offset, up to maxBytes (but always at least that first batch). An offset
// at or past the end gives an empty View; below the start, ErrOffsetOutOfRange.
// The caller must Release the View.
func (l *Log) Read(offset int64, maxBytes int) (*View, error) {
	for attempt := 0; ; attempt++ {
		gen := l.truncations.Load()
		v, err := l.readOnce(offset, maxBytes)
		// A TruncateTo or a cleaner's swap meanwhile may have cut or
		// replaced the bytes under the read; truncationRaced waits for it.
		if err != nil && attempt < 100 && (l.truncationRaced(gen) || errors.Is(err, errSegmentGone)) {
			continue
		}
		return v, err
	}
}

func (l *Log) readOnce(offset int64, maxBytes int) (*View, error) {
	if l.shut.Load() {
		return nil, ErrClosed
	}
	if start := l.start.Load(); offset < start {
		return nil, fmt.Errorf("%w: offset %d below log start %d", ErrOffsetOutOfRange, offset, start)
	}
	if offset >= l.end.Load() {
		return &View{}, nil
	}
	segs := *l.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%w: offset %d below log start %d", ErrOffsetOutOfRange, offset, l.start.Load())
	}
	for ; i < len(segs); i++ {
		s := segs[i]
		if !s.acquire() {
			return nil, errSegmentGone
		}
		v, err := l.readSegment(s, offset, maxBytes)
		if err != nil || v != nil {
			if v == nil {
				s.release()
			}
			return v, err
		}
		s.release()
	}
	return &View{}, nil
}

// readSegment returns nil, nil if the segment has no batch at or after offset.
// A View returned holds the segment's file until Release.
func (l *Log) readSegment(s *segment, offset int64, maxBytes int) (*View, error) {
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return nil, err
	}
	v, err := l.readSegmentFile(s, f, offset, maxBytes)
	if v == nil {
		s.file.release()
	}
	return v, err
}

func (l *Log) readSegmentFile(s *segment, f *os.File, offset int64, maxBytes int) (*View, error) {
	for try := 0; ; try++ {
		v, err := readFrom(s, f, offset, maxBytes)
		if err == nil || try > 0 {
			return v, err
		}
		_, _, trusted, _ := s.indexes()
		if trusted || !(errors.Is(err, errIndexSuspect) || errors.Is(err, ErrCorruption)) {
			return nil, err
		}
		// A damaged index file may have sent the walk astray; rebuild and
		// look again. The appender lock keeps the active segment still.
		l.logger.Warn("rebuilding index after a failed lookup", "segment", s.base, "err", err)
		l.mu.Lock()
		rerr := s.rebuildIndexes(err.Error())
		l.mu.Unlock()
		if rerr != nil {
			return nil, rerr
		}
	}
}

func readFrom(s *segment, f *os.File, offset int64, maxBytes int) (*View, error) {
	// Loading the indexes may shrink the segment (a rebuild that finds
	// damage), so the limit is read after.
	if _, _, _, err := s.indexes(); err != nil {
		return nil, err
	}
	limit := s.size.Load()
	pos, h, found, err := s.find(f, offset, limit)
	if err != nil || !found {
		return nil, err
	}
	end, err := s.boundary(f, pos, h.size, maxBytes, limit)
	if err != nil {
		return nil, err
	}
	good, err := s.verify(f, pos, end, h.baseOffset)
	if err != nil {
		return nil, err
	}
	return &View{seg: s, file: f, pos: pos, n: good - pos}, nil
}

// OffsetForTimestamp returns the base offset and max timestamp of the first
// batch whose max timestamp is >= ts (ListOffsets by time; records are not
// decoded, so the answer is at batch granularity). ok is false if no batch
// is that recent.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	if l.shut.Load() {
		return 0, 0, false
	}
	for _, s := range *l.segs.Load() {
		if !s.acquire() {
			continue
		}
		off, bts, found, err := s.firstAtOrAfter(ts)
		s.release()
		if err != nil {
			l.logger.Warn("timestamp lookup", "segment", s.base, "err", err)
			return 0, 0, false
		}
		if found {
			return off, bts, true
		}
	}
	return 0, 0, false
}

func (s *segment) firstAtOrAfter(ts int64) (int64, int64, bool, error) {
	largest, err := s.largestTimestamp()
	if err != nil || largest < ts {
		return 0, 0, false, err
	}
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return 0, 0, false, err
	}
	defer s.file.release()
	_, tidx, _, err := s.indexes()
	if err != nil {
		return 0, 0, false, err
	}
	limit := s.size.Load()
	pos, h, found, err := s.find(f, s.base+searchStart(tidx, ts), limit)
	for err == nil && found {
		if h.maxTimestamp >= ts {
			return h.baseOffset, h.maxTimestamp, true, nil
		}
		pos += h.size
		if pos >= limit {
			break
		}
		h, err = headerAt(f, pos, limit)
	}
	return 0, 0, false, err
}
