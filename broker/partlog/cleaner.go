package partlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDedupeBufferSize is log.cleaner.dedupe.buffer.size's default.
const DefaultDedupeBufferSize = 128 << 20

// offsetMapEntryBytes is what one key of the offset map costs: a 16-byte
// hash and an 8-byte offset in a Go map, with its slack.
const offsetMapEntryBytes = 48

// CleanOptions are the broker-wide settings of a cleaning.
type CleanOptions struct {
	// DedupeBufferSize bounds the offset map (log.cleaner.dedupe.buffer.size
	// over the cleaner threads); 0 = DefaultDedupeBufferSize. A dirty
	// section with more keys is cleaned in several passes.
	DedupeBufferSize int64
	// Throttle, if set, is called with each count of bytes read or written
	// and may sleep (log.cleaner.io.max.bytes.per.second); an error stops
	// the cleaning, leaving the log as it was.
	Throttle func(ctx context.Context, bytes int64) error
	// StepHook, if set, is called at each step of a cleaning's swap (one
	// of CleanSteps), for crash tests that kill the process there.
	StepHook func(step string)
}

// CleanSteps are the steps of a cleaning StepHook is called at, in order
// (frozen: tests name them): the group's .cleaned files written and
// synced; the swap manifest written and the files renamed to .swap; the
// replaced segments deleted; the .swap files renamed to their final
// names; every group swapped, the checkpoint not yet written.
var CleanSteps = []string{stepCleaned, stepSwap, stepDeleted, stepRenamed, stepCheckpoint}

// CleanStats describes one cleaning pass, as Kafka's cleaner logs it.
type CleanStats struct {
	FirstDirty, MapEnd int64 // the dirty offsets the pass mapped; MapEnd becomes the cleaner checkpoint
	DirtyRatio         float64
	SegmentsIn         int
	SegmentsOut        int
	BytesRead          int64
	BytesWritten       int64
	RecordsRead        int64
	RecordsWritten     int64
	TombstonesDropped  int64
	Elapsed            time.Duration
	// MapUtilization is the fraction of the offset map (DedupeBufferSize)
	// the pass filled.
	MapUtilization float64
}

// Cleanability is what the cleaner's choice of a log needs.
type Cleanability struct {
	CleanBytes, DirtyBytes int64 // below and above the cleaner checkpoint, in cleanable segments
	Ratio                  float64
	// Due: Clean would do something now (dirty ratio at least
	// MinCleanableDirtyRatio, or dirty records older than MaxCompactionLag).
	Due bool
	// Compacted: the log is Config.Compact (else Ratio means nothing).
	Compacted bool
}

// cleanerState is a Log's cleaner bookkeeping (see cleaner.go).
type cleanerState struct {
	mu    sync.Mutex   // one cleaning of the log at a time
	point atomic.Int64 // first dirty offset (the checkpoint); -1 = not read yet
	once  sync.Once
	// hook, in tests, is called at each step of a cleaning; an error stops
	// it there as a crash would (nothing is undone).
	hook func(step string) error
	// stepHook is the running Clean's CleanOptions.StepHook (under mu).
	stepHook func(step string)
}

// Cleaning steps, for test hooks.
const (
	stepCleaned    = "cleaned"    // .cleaned files written and synced
	stepSwap       = "swap"       // swap manifest written, files renamed to .swap
	stepDeleted    = "deleted"    // old segments' files deleted
	stepRenamed    = "renamed"    // .swap files renamed to their final names
	stepCheckpoint = "checkpoint" // all groups swapped, checkpoint not yet written
)

var errCleanAborted = errors.New("log: cleaning stopped by a test hook")

func (l *Log) cleanStep(step string) error {
	if h := l.cleaner.stepHook; h != nil {
		h(step)
	}
	if h := l.cleaner.hook; h != nil {
		if err := h(step); err != nil {
			return fmt.Errorf("%w at %s: %w", errCleanAborted, step, err)
		}
	}
	return nil
}

// CleanerCheckpoint returns the first dirty offset: below it the log has
// been cleaned.
func (l *Log) CleanerCheckpoint() int64 {
	l.cleaner.once.Do(func() { l.cleaner.point.Store(readOffsetFile(cleanerCheckpointPath(l.dir))) })
	return max(l.cleaner.point.Load(), l.start.Load())
}

// sections splits the sealed segments for the cleaner: segs is the list,
// firstDirty the checkpoint, cleanableEnd the base of the first segment the
// cleaner may not touch (the active one, or one holding records younger
// than MinCompactionLag).
func (l *Log) sections() (segs []*segment, firstDirty, cleanableEnd int64, c Cleanability, err error) {
	segs = *l.segs.Load()
	firstDirty = l.CleanerCheckpoint()
	nowMs := l.cfg.Now().UnixMilli()
	cleanableEnd = segs[len(segs)-1].base
	oldestDirty := int64(math.MaxInt64)
	unstable := l.firstUnstable.Load() // as Kafka, nothing at or past it is cleaned
	for i, s := range segs[:len(segs)-1] {
		end := segs[i+1].base
		if end <= firstDirty {
			c.CleanBytes += s.size.Load()
			continue
		}
		if unstable >= 0 && end > unstable {
			cleanableEnd = s.base
			break
		}
		ts, terr := l.segmentTime(s)
		if terr != nil {
			return segs, 0, 0, c, terr
		}
		if lag := l.cfg.MinCompactionLag.Milliseconds(); lag > 0 && nowMs-ts < lag {
			cleanableEnd = s.base
			break
		}
		oldestDirty = min(oldestDirty, ts)
		c.DirtyBytes += s.size.Load()
	}
	if total := c.CleanBytes + c.DirtyBytes; total > 0 {
		c.Ratio = float64(c.DirtyBytes) / float64(total)
	}
	overdue := l.cfg.MaxCompactionLag > 0 && oldestDirty != math.MaxInt64 && nowMs-oldestDirty > l.cfg.MaxCompactionLag.Milliseconds()
	c.Compacted = l.cfg.Compact
	c.Due = l.cfg.Compact && c.DirtyBytes > 0 && (c.Ratio >= l.cfg.MinCleanableDirtyRatio || overdue)
	return segs, firstDirty, cleanableEnd, c, nil
}

// Cleanable reports the dirty ratio of a compacted log and whether a
// cleaning is due (the broker cleans the dirtiest due log first).
func (l *Log) Cleanable() (Cleanability, error) {
	if l.shut.Load() {
		return Cleanability{}, ErrClosed
	}
	_, _, _, c, err := l.sections()
	return c, err
}

// offsetMap maps each key of the dirty section to its last offset, by a
// 128-bit hash of the key (as Kafka's SkimpyOffsetMap does with MD5).
type offsetMap struct {
	seeds    [2]maphash.Seed
	m        map[[2]uint64]int64
	capacity int
}

func newOffsetMap(bufferBytes int64) *offsetMap {
	return &offsetMap{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[[2]uint64]int64{},
		capacity: int(max(bufferBytes/offsetMapEntryBytes, 1))}
}

func (m *offsetMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(m.seeds[0], key), maphash.Bytes(m.seeds[1], key)}
}

// Clean runs one pass of the log cleaner: it maps the keys of the dirty
// section (from the checkpoint, as many as the offset map holds), then
// rewrites every sealed segment below the mapped end in groups of up to
// SegmentBytes, keeping for each key only its last record, dropping
// tombstones older than DeleteRetention and records without a key, and
// swaps each group in crash-safely (see "Compaction" in doc.go). It does
// nothing (zero stats) for a log that is not Compact or has nothing
// cleanable. Appends, reads and retention go on meanwhile.
func (l *Log) Clean(ctx context.Context, opts CleanOptions) (CleanStats, error) {
	l.cleaner.mu.Lock()
	defer l.cleaner.mu.Unlock()
	if l.shut.Load() {
		return CleanStats{}, ErrClosed
	}
	if !l.cfg.Compact {
		return CleanStats{}, nil
	}
	l.cleaner.stepHook = opts.StepHook
	defer func() { l.cleaner.stepHook = nil }()
	began := time.Now()
	gen := l.truncations.Load()
	segs, firstDirty, cleanableEnd, c, err := l.sections()
	if err != nil || firstDirty >= cleanableEnd || gen%2 != 0 {
		return CleanStats{}, err
	}
	// The segments below cleanableEnd; a reference each while we read them.
	var work []*segment
	for _, s := range segs {
		if s.base >= cleanableEnd {
			break
		}
		if !s.acquire() {
			return CleanStats{}, nil // retention took it meanwhile; the next pass sees the new list
		}
		defer s.release()
		work = append(work, s)
	}
	if len(work) == 0 {
		return CleanStats{}, nil
	}
	st := CleanStats{FirstDirty: firstDirty, DirtyRatio: c.Ratio}
	buf := opts.DedupeBufferSize
	if buf <= 0 {
		buf = DefaultDedupeBufferSize
	}
	om := newOffsetMap(buf)
	cd := newCodecs()
	ct := l.newCleanTxns()
	mapEnd, err := l.buildOffsetMap(ctx, opts, cd, om, ct, work, firstDirty, cleanableEnd, &st)
	if err != nil {
		return st, err
	}
	st.MapEnd = mapEnd
	st.MapUtilization = float64(len(om.m)) / float64(om.capacity)
	var rewrite []*segment
	for _, s := range work {
		if s.base < mapEnd {
			rewrite = append(rewrite, s)
		}
	}
	next := cleanableEnd // the base after the last segment of rewrite
	if len(rewrite) < len(segs) {
		next = segs[len(rewrite)].base
	}
	if err := l.allowGapsFromNowOn(); err != nil {
		return st, err
	}
	horizon := l.cfg.Now().UnixMilli() - max(l.cfg.DeleteRetention, 0).Milliseconds()
	for _, g := range l.groupSegments(rewrite, next) {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := l.cleanGroup(ctx, opts, cd, om, ct, g, mapEnd, horizon, &gen, &st); err != nil {
			return st, err
		}
	}
	if err := l.cleanStep(stepCheckpoint); err != nil {
		return st, err
	}
	if err := l.setCleanerCheckpoint(mapEnd); err != nil {
		return st, err
	}
	st.Elapsed = time.Since(began)
	return st, nil
}

// segmentGroup is consecutive segments cleaned into one, named by the
// first; end is the base of the segment after the group.
type segmentGroup struct {
	segs []*segment
	end  int64
}

// groupSegments groups consecutive segments whose sizes add up to at most
// SegmentBytes and whose offsets fit one segment's index; next is the
// base of the segment after the last.
func (l *Log) groupSegments(segs []*segment, next int64) []segmentGroup {
	var out []segmentGroup
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].size.Load()
		for j < len(segs) && size+segs[j].size.Load() <= l.cfg.SegmentBytes && groupEnd(segs, j+1, next)-segs[i].base <= math.MaxInt32 {
			size += segs[j].size.Load()
			j++
		}
		out = append(out, segmentGroup{segs: segs[i:j], end: groupEnd(segs, j, next)})
		i = j
	}
	return out
}

func groupEnd(segs []*segment, j int, next int64) int64 {
	if j < len(segs) {
		return segs[j].base
	}
	return next
}

// eachBatch calls fn with each batch of s (its bytes are reused after fn
// returns), CRC-checked: the cleaner never copies a damaged batch.
func (l *Log) eachBatch(ctx context.Context, opts CleanOptions, s *segment, fn func(h batchHeader, b []byte) (stop bool, err error)) error {
	f, err := s.openFile(useOrdinary)
	if err != nil {
		return err
	}
	defer s.file.release()
	limit := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, limit), 1<<20)
	var buf []byte
	for pos := int64(0); pos < limit; {
		hb, err := r.Peek(batchHeaderSize)
		if err != nil {
			return fmt.Errorf("log: clean segment %d at byte %d: %w", s.base, pos, err)
		}
		h, err := checkHeader(hb, limit-pos)
		if err != nil {
			return fmt.Errorf("%w: clean segment %d at byte %d: %v", ErrCorruption, s.base, pos, err)
		}
		if int64(cap(buf)) < h.size {
			buf = make([]byte, h.size)
		}
		b := buf[:h.size]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		// The whole batch's header: a control batch's marker parsed too.
		if h, err = checkBatch(b); err != nil {
			return fmt.Errorf("%w: clean segment %d at byte %d: %v", ErrCorruption, s.base, pos, err)
		}
		pos += h.size
		if opts.Throttle != nil {
			if err := opts.Throttle(ctx, h.size); err != nil {
				return err
			}
		}
		stop, err := fn(h, b)
		if err != nil || stop {
			return err
		}
	}
	return nil
}

// buildOffsetMap maps the keys of the dirty records from firstDirty on,
// below cleanableEnd, until the map is full (at a batch boundary); it
// returns the offset after the last mapped batch.
func (l *Log) buildOffsetMap(ctx context.Context, opts CleanOptions, cd *codecs, om *offsetMap, ct *cleanTxns, segs []*segment, firstDirty, cleanableEnd int64, st *CleanStats) (int64, error) {
	mapEnd := cleanableEnd
	var rs []record
	full := false
	for i, s := range segs {
		if full {
			break
		}
		if i+1 < len(segs) && segs[i+1].base <= firstDirty {
			continue
		}
		err := l.eachBatch(ctx, opts, s, func(h batchHeader, b []byte) (bool, error) {
			// Aborted records never shadow others (Kafka skips them too).
			if h.lastOffset() < firstDirty || h.isControl() || h.transactional() && ct.isAborted(h) {
				return false, nil
			}
			if len(om.m) > 0 && len(om.m)+int(h.recordCount) > om.capacity {
				mapEnd, full = h.baseOffset, true
				return true, nil
			}
			raw, err := cd.records(b)
			if err != nil {
				return false, fmt.Errorf("%w: segment %d batch %d: %v", ErrCorruption, s.base, h.baseOffset, err)
			}
			if rs, err = parseRecords(raw, h.recordCount, rs[:0]); err != nil {
				return false, fmt.Errorf("%w: segment %d batch %d: %v", ErrCorruption, s.base, h.baseOffset, err)
			}
			for _, r := range rs {
				if off := h.baseOffset + int64(r.offsetDelta); off >= firstDirty && r.key != nil {
					om.m[om.hash(r.key)] = off
				}
			}
			return false, nil
		})
		if err != nil {
			return 0, err
		}
	}
	return mapEnd, nil
}

// cleanGroup writes the retained batches of a group into .cleaned files
// and swaps them in.
//
// Transactions (cleaner_txn.go): batches of aborted transactions are
// dropped whole; a marker is dropped once no data of its transaction
// remain and its segment is older than delete.retention.ms, an ABORT's
// aborted-transaction entry with it.
func (l *Log) cleanGroup(ctx context.Context, opts CleanOptions, cd *codecs, om *offsetMap, ct *cleanTxns, g segmentGroup, mapEnd, horizon int64, gen *int64, st *CleanStats) error {
	base := g.segs[0].base
	out, err := newCleanedSegment(l.dir, base, g.segs[0].interval)
	if err != nil {
		return err
	}
	defer out.discard()
	var rs, kept []record
	changed := len(g.segs) > 1
	var mtime time.Time // the group's newest: the cleaned file gets it, as in Kafka
	for _, s := range g.segs {
		segMs := l.cfg.Now().UnixMilli()
		if fi, err := os.Stat(segmentPath(l.dir, s.base, logSuffix)); err == nil {
			segMs = fi.ModTime().UnixMilli()
			if fi.ModTime().After(mtime) {
				mtime = fi.ModTime()
			}
		}
		err := l.eachBatch(ctx, opts, s, func(h batchHeader, b []byte) (bool, error) {
			st.BytesRead += h.size
			st.RecordsRead += int64(h.recordCount)
			aborted := false
			switch {
			case h.isControl() && h.baseOffset >= mapEnd:
				delete(ct.seen, h.producerID)
			case h.isControl():
				if !ct.keepMarker(h, segMs, horizon) {
					changed = true
					return false, nil
				}
			case h.transactional():
				aborted = ct.dataBatch(h)
			}
			if h.isControl() || h.baseOffset >= mapEnd {
				st.RecordsWritten += int64(h.recordCount)
				return false, out.write(h, b, opts, ctx)
			}
			if aborted {
				changed = true
				return false, nil
			}
			raw, err := cd.records(b)
			if err != nil {
				return false, fmt.Errorf("%w: segment %d batch %d: %v", ErrCorruption, s.base, h.baseOffset, err)
			}
			if rs, err = parseRecords(raw, h.recordCount, rs[:0]); err != nil {
				return false, fmt.Errorf("%w: segment %d batch %d: %v", ErrCorruption, s.base, h.baseOffset, err)
			}
			kept = kept[:0]
			logAppend := b[offAttributes+1]&attrLogAppendTime != 0
			for _, r := range rs {
				if l.retain(om, h, logAppend, r, mapEnd, horizon, segMs, st) {
					kept = append(kept, r)
				}
			}
			st.RecordsWritten += int64(len(kept))
			switch {
			case len(kept) == len(rs):
				return false, out.write(h, b, opts, ctx)
			case len(kept) == 0:
				changed = true
				return false, nil
			}
			changed = true
			nb, err := cd.rebuildBatch(b, h, kept)
			if err != nil {
				return false, fmt.Errorf("log: clean segment %d batch %d: %w", s.base, h.baseOffset, err)
			}
			return false, out.write(parseHeader(nb), nb, opts, ctx)
		})
		if err != nil {
			return err
		}
	}
	st.SegmentsIn += len(g.segs)
	st.SegmentsOut++
	st.BytesWritten += out.pos
	if !changed {
		return nil // nothing to drop: the segment stays as it is
	}
	out.txn = l.groupTxnIndex(ct, g)
	if err := out.finish(mtime); err != nil {
		return err
	}
	if err := l.cleanStep(stepCleaned); err != nil {
		out.keep = true
		return err
	}
	if err := l.swapIn(g, out, gen); err != nil || !out.done {
		return err
	}
	l.forgetDropped(ct, g)
	return nil
}

// retain decides whether the cleaner keeps record r of the batch h.
func (l *Log) retain(om *offsetMap, h batchHeader, logAppend bool, r record, mapEnd, horizon, segMs int64, st *CleanStats) bool {
	off := h.baseOffset + int64(r.offsetDelta)
	if off >= mapEnd {
		return true // not mapped yet: a later pass decides
	}
	if r.key == nil {
		return false // a compacted topic refuses such records; older ones go
	}
	if last, ok := om.m[om.hash(r.key)]; ok && last > off {
		return false
	}
	if r.nullValue {
		ts := h.baseTimestamp + r.tsDelta
		if logAppend {
			ts = h.maxTimestamp
		}
		if ts < 0 {
			ts = segMs
		}
		if ts < horizon {
			st.TombstonesDropped++
			return false
		}
	}
	return true
}
