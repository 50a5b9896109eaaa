package partlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// epochCheckpointFile is Kafka's leader-epoch-checkpoint: the line "0"
// (version), the number of entries, then one "<epoch> <startOffset>" line
// per entry, oldest first. Frozen name and format.
const epochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry says: leader epoch epoch wrote its first batch at start.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is the leader epoch cache (Kafka's LeaderEpochFileCache):
// epochs strictly increasing, start offsets strictly increasing. The Log
// mutates it only under its appender lock; mu lets LatestEpoch and
// EndOffsetForEpoch read it alongside, and makes a truncation's cut of
// the cache and of the end offset one step for them.
type epochCache struct {
	path string

	mu      sync.RWMutex
	entries []epochEntry

	// dirty: the file lags the entries (a write failed, or a rebuild or
	// a cut is not yet written). Appender lock only.
	dirty bool
}

// loadEpochCache reads the checkpoint; ok is false when it is missing or
// unreadable, and the caller rebuilds the cache from the batches.
func loadEpochCache(dir string) (c *epochCache, ok bool) {
	c = &epochCache{path: filepath.Join(dir, epochCheckpointFile)}
	b, err := os.ReadFile(c.path)
	if err != nil {
		return c, false
	}
	es, err := decodeEpochCheckpoint(b)
	if err != nil {
		return c, false
	}
	c.entries = es
	return c, true
}

func encodeEpochCheckpoint(es []epochEntry) []byte {
	b := fmt.Appendf(nil, "0\n%d\n", len(es))
	for _, e := range es {
		b = fmt.Appendf(b, "%d %d\n", e.epoch, e.start)
	}
	return b
}

func decodeEpochCheckpoint(b []byte) ([]epochEntry, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("epoch checkpoint: not newline-terminated")
	}
	lines := strings.Split(string(bytes.TrimSuffix(b, []byte("\n"))), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("epoch checkpoint: bad version line")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("epoch checkpoint: count %q for %d entries", lines[1], len(lines)-2)
	}
	es := make([]epochEntry, 0, n)
	for _, ln := range lines[2:] {
		f := strings.Split(ln, " ")
		if len(f) != 2 {
			return nil, fmt.Errorf("epoch checkpoint: bad line %q", ln)
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ep < 0 || off < 0 {
			return nil, fmt.Errorf("epoch checkpoint: bad line %q", ln)
		}
		if k := len(es); k > 0 && (int32(ep) <= es[k-1].epoch || off <= es[k-1].start) {
			return nil, fmt.Errorf("epoch checkpoint: line %q not after the previous one", ln)
		}
		es = append(es, epochEntry{epoch: int32(ep), start: off})
	}
	return es, nil
}

// latest returns the newest cached epoch, -1 when there is none.
func (c *epochCache) latest() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.entries); n > 0 {
		return c.entries[n-1].epoch
	}
	return -1
}

// observe records the batch's epoch if it is newer than the latest one.
// Older or unset (-1) epochs are ignored: batches arrive in log order, so
// only an increase starts a new epoch. It reports whether the cache changed.
func (c *epochCache) observe(h batchHeader) bool {
	if h.leaderEpoch < 0 {
		return false
	}
	// Only the appender changes entries, so it may read them unlocked; the
	// lock is for the rare change, not for every batch.
	if n := len(c.entries); n > 0 && (h.leaderEpoch <= c.entries[n-1].epoch || h.baseOffset <= c.entries[n-1].start) {
		return false
	}
	c.mu.Lock()
	c.entries = append(c.entries, epochEntry{epoch: h.leaderEpoch, start: h.baseOffset})
	c.mu.Unlock()
	c.dirty = true
	return true
}

// observeAll feeds the headers of batches about to be written, in order.
func (c *epochCache) observeAll(hs []batchHeader) bool {
	changed := false
	for _, h := range hs {
		if c.observe(h) {
			changed = true
		}
	}
	return changed
}

// truncateFromEnd drops the epochs starting at or after end (Kafka's
// truncateFromEnd), for a log cut at end.
func (c *epochCache) truncateFromEnd(end int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.truncateFromEndLocked(end)
}

func (c *epochCache) truncateFromEndLocked(end int64) {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].start >= end {
		n--
	}
	if n < len(c.entries) {
		c.entries = c.entries[:n]
		c.dirty = true
	}
}

// truncateFromStart forgets epochs wholly below the log start offset, as
// Kafka's truncateFromStart does: the last such entry is kept with its
// start moved up to start, since its epoch still covers the first batches.
func (c *epochCache) truncateFromStart(start int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.entries) && c.entries[i].start < start {
		i++
	}
	if i == 0 {
		return
	}
	keep := c.entries[i-1]
	keep.start = start
	rest := c.entries[i:]
	if len(rest) > 0 && rest[0].start == start {
		c.entries = append([]epochEntry(nil), rest...)
	} else {
		c.entries = append([]epochEntry{keep}, rest...)
	}
	c.dirty = true
}

// reset empties the cache before a rebuild.
func (c *epochCache) reset() {
	c.mu.Lock()
	c.entries = nil
	c.dirty = true
	c.mu.Unlock()
}

func (c *epochCache) snapshot() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]epochEntry(nil), c.entries...)
}

// persist writes the checkpoint if it lags the entries: atomically (temp,
// fsync, rename) and with the directory synced, so that a crash leaves
// either the old or the new file. Appender lock only.
func (c *epochCache) persist() error {
	if !c.dirty {
		return nil
	}
	if err := writeFileAtomic(c.path, encodeEpochCheckpoint(c.snapshot())); err != nil {
		return fmt.Errorf("log: write %s: %w", epochCheckpointFile, err)
	}
	if err := syncDir(filepath.Dir(c.path)); err != nil {
		return fmt.Errorf("log: write %s: %w", epochCheckpointFile, err)
	}
	c.dirty = false
	return nil
}

// endOffsetFor implements EndOffsetForEpoch given the log end offset; the
// caller holds c.mu for reading.
func (c *epochCache) endOffsetForLocked(requested int32, logEnd int64) (int32, int64) {
	es := c.entries
	if requested < 0 || len(es) == 0 {
		return -1, -1
	}
	if requested == es[len(es)-1].epoch {
		return requested, logEnd
	}
	if requested < es[0].epoch || requested > es[len(es)-1].epoch {
		return -1, -1
	}
	// es[i] is the first epoch greater than requested; es[i-1] the largest <= requested.
	i := 0
	for es[i].epoch <= requested {
		i++
	}
	return es[i-1].epoch, es[i].start
}

// LatestEpoch returns the newest leader epoch found in the log's batches,
// or -1 when no batch carries one.
func (l *Log) LatestEpoch() int32 { return l.epochs.latest() }

// EndOffsetForEpoch answers OffsetsForLeaderEpoch for the requested epoch:
// for the latest cached epoch, the log end offset; otherwise the start
// offset of the first cached epoch greater than requested, paired with the
// largest cached epoch <= requested. An undefined (-1) request, an epoch
// below the first cached one or above the latest, or an empty cache give
// (-1, -1). The answer and the end offset it may use are read together, so
// a concurrent append or truncation never mixes old and new state.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	c := l.epochs
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.endOffsetForLocked(epoch, l.end.Load())
}

// observeEpochs records the epochs of batches about to be written and
// writes the checkpoint if they changed it, before the bytes go to the
// segment (as Kafka does): a crash in between leaves a checkpoint ahead of
// the log, which Open cuts back to the log end. The caller holds l.mu.
func (l *Log) observeEpochs(hs []batchHeader) error {
	if !l.epochs.observeAll(hs) {
		return nil
	}
	if err := l.epochs.persist(); err != nil {
		l.epochs.truncateFromEnd(hs[0].baseOffset)
		return err
	}
	return nil
}

// undoEpochs takes back what observeEpochs recorded when the write that
// followed failed. The file may keep the entries until the next write;
// Open cuts it at the log end anyway.
func (l *Log) undoEpochs(first int64) {
	l.epochs.truncateFromEnd(first)
	if err := l.epochs.persist(); err != nil {
		l.logger.Warn("leader epoch checkpoint", "err", err)
	}
}

// finishEpochLoad completes Open's epoch cache: rebuilt from the batches
// when the checkpoint was missing or unreadable, then cut to the log's
// offset range and written if that changed anything.
func (l *Log) finishEpochLoad(fromFile bool) error {
	if !fromFile {
		l.epochs.reset()
		if err := l.rebuildEpochs(*l.segs.Load()); err != nil {
			return fmt.Errorf("log: rebuild leader epoch cache: %w", err)
		}
		l.logger.Info("rebuilt leader epoch cache from the log", "epochs", len(l.epochs.snapshot()))
	}
	l.epochs.truncateFromEnd(l.end.Load())
	l.epochs.truncateFromStart(l.start.Load())
	return l.files.essential(l.epochs.persist)
}

// rebuildEpochs feeds the cache from the segments' batch headers. Epochs
// never decrease along a log, so a segment whose first and last batches
// carry the same epoch contributes at most its first batch, and only the
// rare segments where the epoch changes are walked batch by batch.
func (l *Log) rebuildEpochs(segs []*segment) error {
	for _, s := range segs {
		size := s.size.Load()
		if size == 0 {
			continue
		}
		f, err := s.openFile(useEssential)
		if err != nil {
			return err
		}
		err = l.rebuildEpochsOf(s, f, size)
		s.file.release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *Log) rebuildEpochsOf(s *segment, f *os.File, size int64) error {
	first, err := headerAt(f, 0, size)
	if err != nil {
		return err
	}
	last, err := s.lastHeader(f, size)
	if err != nil {
		return err
	}
	if first.leaderEpoch == last.leaderEpoch {
		l.epochs.observe(first)
		return nil
	}
	for pos := int64(0); pos < size; {
		h, err := headerAt(f, pos, size)
		if err != nil {
			return err
		}
		l.epochs.observe(h)
		pos += h.size
	}
	return nil
}

// lastHeader returns the header of the segment's last batch below size,
// walking from the last index entry.
func (s *segment) lastHeader(f *os.File, size int64) (batchHeader, error) {
	idx, _, _, err := s.indexes()
	if err != nil {
		return batchHeader{}, err
	}
	from := floorByPosition(idx, size-1)
	for {
		var last batchHeader
		pos := from
		for pos < size {
			h, err := headerAt(f, pos, size)
			if err != nil {
				break
			}
			last = h
			pos += h.size
		}
		if pos == size {
			return last, nil
		}
		if from == 0 {
			return last, fmt.Errorf("segment %d: batch walk ends at byte %d of %d", s.base, pos, size)
		}
		from = 0 // an index entry read from disk may be off; walk from the start
	}
}
