package partlog

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The cleaner's files. Frozen names. A segment being cleaned is written as
// NNN.log.cleaned (and .index.cleaned, .timeindex.cleaned), renamed to
// .swap once a swap manifest names the segments it replaces, and to its
// final names after they are deleted, as Kafka's cleaner does.
const (
	cleanedSuffix         = ".cleaned"
	swapSuffix            = ".swap"
	cleanerCheckpointFile = "cleaner-checkpoint"
	// cleanerSwapFile is the swap manifest: base int64 | end int64 |
	// crc32c uint32 of those 16 bytes. While it exists, the segment named
	// base replaces every segment whose base is in [base, end).
	cleanerSwapFile = "cleaner-swap"
)

func cleanerCheckpointPath(dir string) string { return filepath.Join(dir, cleanerCheckpointFile) }

// readOffsetFile reads a file holding offset int64 | crc32c uint32 (the
// recovery point's format); 0 if it is missing or damaged.
func readOffsetFile(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 12 || crc32.Checksum(b[:8], castagnoli) != binary.BigEndian.Uint32(b[8:]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func withCRC(b []byte) []byte { return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)) }

func (l *Log) setCleanerCheckpoint(off int64) error {
	b := withCRC(binary.BigEndian.AppendUint64(nil, uint64(off)))
	if err := l.files.essential(func() error { return writeFileAtomic(cleanerCheckpointPath(l.dir), b) }); err != nil {
		return fmt.Errorf("log: write cleaner checkpoint: %w", err)
	}
	l.cleaner.point.Store(off)
	return nil
}

// allowGapsFromNowOn makes the log accept offset gaps in its segments
// (see segment.allowGaps) before the first one is written: the marker is
// the cleaner checkpoint file, written with its current value.
func (l *Log) allowGapsFromNowOn() error {
	if l.gaps.Load() {
		return nil
	}
	if err := l.setCleanerCheckpoint(l.CleanerCheckpoint()); err != nil {
		return err
	}
	l.gaps.Store(true)
	return nil
}

// cleanerTruncated moves the cleaner checkpoint back to offset after a
// truncation (records appended after it are dirty). The caller holds l.mu.
func (l *Log) cleanerTruncated(offset int64) {
	if l.CleanerCheckpoint() > offset {
		if err := l.setCleanerCheckpoint(offset); err != nil {
			l.logger.Warn("cleaner checkpoint after truncation", "err", err)
		}
	}
}

// cleanedSegment is the output of cleaning one group.
type cleanedSegment struct {
	dir            string
	base, interval int64
	f              *os.File
	w              *bufio.Writer
	pos            int64
	ix             indexer
	keep, done     bool         // keep: a test crash leaves the files; done: swapped in
	txn            []AbortedTxn // the group's aborted-transaction index
}

func cleanedPath(dir string, base int64, suffix string) string {
	return segmentPath(dir, base, suffix) + cleanedSuffix
}

func newCleanedSegment(dir string, base, interval int64) (*cleanedSegment, error) {
	f, err := os.OpenFile(cleanedPath(dir, base, logSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log: clean segment %d: %w", base, err)
	}
	return &cleanedSegment{dir: dir, base: base, interval: interval, f: f, w: bufio.NewWriterSize(f, 1<<20),
		ix: newIndexer(base, interval)}, nil
}

func (c *cleanedSegment) write(h batchHeader, b []byte, opts CleanOptions, ctx context.Context) error {
	c.ix.add(c.pos, h)
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("log: write cleaned segment %d: %w", c.base, err)
	}
	c.pos += int64(len(b))
	if opts.Throttle != nil {
		return opts.Throttle(ctx, int64(len(b)))
	}
	return nil
}

// finish makes the .cleaned files durable, the .log with mtime.
func (c *cleanedSegment) finish(mtime time.Time) error {
	err := c.w.Flush()
	if err == nil {
		err = c.f.Sync()
	}
	err = errors.Join(err, c.f.Close())
	c.f = nil
	if err != nil {
		return fmt.Errorf("log: write cleaned segment %d: %w", c.base, err)
	}
	c.ix.seal()
	var ib, tb []byte
	for _, e := range c.ix.idx {
		ib = e.appendTo(ib)
	}
	for _, e := range c.ix.tidx {
		tb = e.appendTo(tb)
	}
	// The .txnindex always, empty too: the swap renames it with the others
	// and so replaces the first segment's (an empty one is removed after).
	if err := errors.Join(writeFileAtomic(cleanedPath(c.dir, c.base, indexSuffix), ib),
		writeFileAtomic(cleanedPath(c.dir, c.base, timeIndexSuffix), tb),
		writeFileAtomic(cleanedPath(c.dir, c.base, txnIndexSuffix), encodeTxnIndex(c.txn))); err != nil {
		return fmt.Errorf("log: write indexes of cleaned segment %d: %w", c.base, err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(cleanedPath(c.dir, c.base, logSuffix), mtime, mtime); err != nil {
			return err
		}
	}
	return syncDir(c.dir)
}

// discard removes the files of a cleaning that was not swapped in.
func (c *cleanedSegment) discard() {
	if c.f != nil {
		c.f.Close()
	}
	if c.done || c.keep {
		return
	}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		os.Remove(cleanedPath(c.dir, c.base, suf))
	}
}

// swapIn replaces the group's segments by the cleaned one, unless the log
// changed under the cleaning (retention, a truncation, Close): then the
// cleaning is dropped. Under l.mu, with the truncation generation odd so
// that readers failing on a replaced segment wait and retry.
// gen is the truncation generation the cleaning began at; the swap's own
// bumps are added to it.
func (l *Log) swapIn(g segmentGroup, out *cleanedSegment, gen *int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.broken != nil || l.truncations.Load() != *gen {
		return nil
	}
	// A roll's background work on a segment of the group (its sync, its
	// index files) must be over before the files change.
	<-l.lastRollDone
	segs := *l.segs.Load()
	i := -1
	for k, s := range segs {
		if s == g.segs[0] {
			i = k
			break
		}
	}
	n := len(g.segs)
	if i < 0 || i+n >= len(segs) || segs[i+n].base != g.end {
		return nil
	}
	for k, s := range g.segs {
		if segs[i+k] != s {
			return nil
		}
	}
	l.rpMu.Lock()
	l.truncations.Add(1)
	l.rpMu.Unlock()
	defer func() { *gen = l.truncations.Add(1) }()

	err := l.swapFiles(g, out)
	if errors.Is(err, errCleanAborted) {
		out.keep = true
		return err
	}
	if err != nil {
		// Files may be half renamed: only recovery (which the manifest
		// drives) may decide; refuse appends until the log is reopened.
		l.broken = fmt.Errorf("%w: swap of cleaned segment %d failed half way, reopen the log: %w", ErrCorruption, g.segs[0].base, err)
		out.keep = true
		return l.broken
	}
	s := newSegmentStruct(l.dir, out.base, out.interval, l.files.newHandle(segmentPath(l.dir, out.base, logSuffix), nil), &l.gaps)
	s.size.Store(out.pos)
	s.maxTs.Store(out.ix.maxTs)
	s.maxTsOffset = out.ix.maxTsOffset
	s.idx, s.tidx, s.idxLoaded, s.idxTrusted = out.ix.idx, out.ix.tidx, true, true
	s.next = g.end
	s.markVerified(0, out.pos)
	ns := make([]*segment, 0, len(segs)-n+1)
	ns = append(append(append(ns, segs[:i]...), s), segs[i+n:]...)
	l.segs.Store(&ns)
	for _, old := range g.segs {
		old.release()
	}
	out.done = true
	if err := errors.Join(os.Remove(filepath.Join(l.dir, cleanerSwapFile)), syncDir(l.dir)); err != nil {
		l.logger.Warn("removing the cleaner's swap manifest", "err", err)
	}
	return nil
}

// swapFiles does the renames of swapIn: manifest, .cleaned to .swap, old
// segments deleted, .swap to final names. Old segments stop opening their
// files first (Views already open keep their descriptors).
func (l *Log) swapFiles(g segmentGroup, out *cleanedSegment) error {
	base := out.base
	manifest := withCRC(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(base)), uint64(g.end)))
	if err := errors.Join(writeFileAtomic(filepath.Join(l.dir, cleanerSwapFile), manifest), syncDir(l.dir)); err != nil {
		return err
	}
	suffixes := []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} // the .log last: its .swap commits
	for _, suf := range suffixes {
		if err := os.Rename(cleanedPath(l.dir, base, suf), segmentPath(l.dir, base, suf)+swapSuffix); err != nil {
			return err
		}
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	if err := l.cleanStep(stepSwap); err != nil {
		return err
	}
	for _, old := range g.segs {
		old.deleted.Store(true)
		old.file.close()
	}
	for _, old := range g.segs[1:] {
		if err := old.remove(); err != nil {
			return err
		}
	}
	if err := l.cleanStep(stepDeleted); err != nil {
		return err
	}
	for _, suf := range suffixes {
		if err := os.Rename(segmentPath(l.dir, base, suf)+swapSuffix, segmentPath(l.dir, base, suf)); err != nil {
			return err
		}
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	if len(out.txn) == 0 {
		os.Remove(segmentPath(l.dir, base, txnIndexSuffix)) // only segments with aborts have one
	}
	return l.cleanStep(stepRenamed)
}

// finishCleaning completes or undoes, at Open, a swap a crash interrupted,
// and removes other leftovers of the cleaner; it returns the directory's
// names afterwards. With a manifest: if the .log is still .cleaned the
// swap had not committed and is undone; else the segments it replaces are
// deleted and the .swap files take their final names.
func finishCleaning(dir string, names []string) ([]string, error) {
	mb, err := os.ReadFile(filepath.Join(dir, cleanerSwapFile))
	if err == nil && len(mb) == 20 && crc32.Checksum(mb[:16], castagnoli) == binary.BigEndian.Uint32(mb[16:]) {
		base, end := int64(binary.BigEndian.Uint64(mb)), int64(binary.BigEndian.Uint64(mb[8:]))
		if err := finishSwap(dir, names, base, end); err != nil {
			return nil, fmt.Errorf("log: finish the cleaner's swap of segment %d: %w", base, err)
		}
	}
	if err == nil || !os.IsNotExist(err) {
		if err := errors.Join(os.Remove(filepath.Join(dir, cleanerSwapFile)), syncDir(dir)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if names, err = listDirNames(dir); err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

func finishSwap(dir string, names []string, base, end int64) error {
	suffixes := []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	if _, err := os.Stat(cleanedPath(dir, base, logSuffix)); err == nil {
		for _, suf := range suffixes {
			for _, p := range []string{cleanedPath(dir, base, suf), segmentPath(dir, base, suf) + swapSuffix} {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
		return syncDir(dir)
	}
	for _, suf := range suffixes {
		for _, b := range listOffsetFiles(names, suf) {
			if b > base && b < end {
				if err := os.Remove(segmentPath(dir, b, suf)); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
	}
	for _, suf := range suffixes {
		p := segmentPath(dir, base, suf)
		if err := os.Rename(p+swapSuffix, p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return syncDir(dir)
}
