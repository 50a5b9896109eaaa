package partlog

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// DefaultMaxOpenFiles is the capacity of the private FileCache a Log gets
// when Config.Files is nil.
const DefaultMaxOpenFiles = 64

// FileCache bounds how many segment .log files are open at once across the
// Logs that share it, as pebble's table cache and RocksDB's max_open_files
// do: a segment's file is opened on first use and stays open while it is in
// use (an Append, a Read, a View being sent) and afterwards until the cache
// needs its slot, when the least recently used idle file is closed. A file
// in use is never closed; if every open file is in use the cache goes over
// its capacity rather than fail, by at most the number of concurrent users.
//
// The active segment's file is cached like any other, so an idle partition
// holds no descriptor at all and the number of partitions a process serves
// is not bounded by RLIMIT_NOFILE. Index files hold none either: their
// entries live in memory and the files are written whole when a segment is
// sealed (see doc.go).
//
// A FileCache also keeps a reserve of spare descriptors (open on /dev/null).
// When the process runs out of descriptors (EMFILE), the work that must not
// fail for lack of one (sealing a segment at roll, fsyncing, writing
// checkpoints and index files, Close) hands a spare back to the kernel and
// retries; opening a new partition or an idle segment never uses the
// reserve, so it fails with ErrNoDescriptors instead and what is open keeps
// working. Spares are taken back by Replenish, once descriptors are free.
//
// A FileCache is safe for concurrent use.
type FileCache struct {
	capacity int

	mu    sync.Mutex
	open  int       // handles holding an open file
	idle  list.List // *fileHandle with an open file and no users, least recently used first
	spare []*os.File
	want  int // reserve size asked for

	opens, evictions, failures atomic.Int64
}

// NewFileCache returns a cache holding at most capacity open segment files
// (at least 1) and reserve spare descriptors (0 = none).
func NewFileCache(capacity, reserve int) *FileCache {
	c := &FileCache{capacity: max(capacity, 1), want: max(reserve, 0)}
	c.Replenish()
	return c
}

// FileCacheStats is a snapshot of a FileCache's counters.
type FileCacheStats struct {
	Capacity  int   // the bound on open files
	Open      int   // segment files open now (idle and in use)
	Idle      int   // of which not in use: they close when the slot is needed
	Spare     int   // reserve descriptors held now
	Reserve   int   // reserve descriptors asked for
	Opens     int64 // files opened since the cache was made
	Evictions int64 // idle files closed to make room
	Failures  int64 // opens that failed for lack of descriptors
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FileCacheStats{Capacity: c.capacity, Open: c.open, Idle: c.idle.Len(), Spare: len(c.spare), Reserve: c.want,
		Opens: c.opens.Load(), Evictions: c.evictions.Load(), Failures: c.failures.Load()}
}

// Replenish takes back spare descriptors used up since the last call, as
// far as the process has descriptors free. It reports whether the reserve
// is full. The broker calls it periodically.
func (c *FileCache) Replenish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.spare) < c.want {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return false
		}
		c.spare = append(c.spare, f)
	}
	return true
}

// Close closes the spare descriptors. Files of Logs still open stay open.
func (c *FileCache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.spare {
		f.Close()
	}
	c.spare, c.want = nil, 0
}

// isNoDescriptors reports whether err is the process (EMFILE) or the
// system (ENFILE) running out of file descriptors.
func isNoDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// useSpareLocked gives one spare descriptor back to the kernel; false if
// none is left.
func (c *FileCache) useSpareLocked() bool {
	n := len(c.spare)
	if n == 0 {
		return false
	}
	c.spare[n-1].Close()
	c.spare = c.spare[:n-1]
	return true
}

// essential runs op, which opens a descriptor for work that must not fail
// for lack of one; on EMFILE it frees an idle cached file or a spare and
// tries again.
func (c *FileCache) essential(op func() error) error {
	for {
		err := op()
		if err == nil || !isNoDescriptors(err) {
			return err
		}
		c.mu.Lock()
		freed := c.freeOneLocked(useEssential)
		c.mu.Unlock()
		if !freed {
			c.failures.Add(1)
			return fmt.Errorf("%w: %w", ErrNoDescriptors, err)
		}
	}
}

// evictLocked closes the least recently used idle file; it reports whether
// there was one.
func (c *FileCache) evictLocked() bool {
	e := c.idle.Front()
	if e == nil {
		return false
	}
	h := e.Value.(*fileHandle)
	c.idle.Remove(e)
	h.elem = nil
	h.f.Close()
	h.f = nil
	c.open--
	c.evictions.Add(1)
	return true
}

// makeRoomLocked evicts idle files until one more fits.
func (c *FileCache) makeRoomLocked() {
	for c.open >= c.capacity && c.evictLocked() {
	}
}

// fileHandle is one segment's .log file as the cache knows it.
type fileHandle struct {
	cache *FileCache
	path  string

	// Guarded by cache.mu.
	f      *os.File
	users  int
	elem   *list.Element // in cache.idle while open and unused
	closed bool          // the segment is gone: no more users, close when unused
}

// newHandle registers path with the cache. f, if not nil, is the file
// already open (a segment just created) and counts against the capacity.
func (c *FileCache) newHandle(path string, f *os.File) *fileHandle {
	h := &fileHandle{cache: c, path: path}
	if f != nil {
		c.mu.Lock()
		c.makeRoomLocked()
		h.f = f
		c.open++
		c.opens.Add(1)
		h.elem = c.idle.PushBack(h)
		c.mu.Unlock()
	}
	return h
}

// fileUse says what a use of a segment file may do when the process is out
// of descriptors.
type fileUse int

const (
	// useOrdinary (reads, appends) may close idle cached files to get one.
	useOrdinary fileUse = iota
	// useEssential (roll, flush, Close, recovery) may also use the reserve.
	useEssential
)

// freeOneLocked frees a descriptor so that an open that failed with
// EMFILE can be retried: essential work takes a spare first (that is what
// the reserve is for; an idle cached file is likely an active segment that
// would have to open again), then an idle cached file; other work only
// closes an idle cached file.
func (c *FileCache) freeOneLocked(use fileUse) bool {
	if use == useEssential && c.useSpareLocked() {
		return true
	}
	return c.evictLocked()
}

// acquire returns the open file, opening it if needed; the caller must
// release it and must not close it. When the process is out of
// descriptors it frees what use allows and retries, else fails with
// ErrNoDescriptors.
func (h *fileHandle) acquire(use fileUse) (*os.File, error) {
	c := h.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		return nil, errSegmentGone
	}
	if h.f == nil {
		c.makeRoomLocked()
		f, err := os.OpenFile(h.path, os.O_RDWR, 0)
		for err != nil && isNoDescriptors(err) && c.freeOneLocked(use) {
			f, err = os.OpenFile(h.path, os.O_RDWR, 0)
		}
		if err != nil {
			if os.IsNotExist(err) {
				return nil, errSegmentGone
			}
			if isNoDescriptors(err) {
				c.failures.Add(1)
				return nil, fmt.Errorf("%w: segment %s: %w", ErrNoDescriptors, h.path, err)
			}
			return nil, err
		}
		h.f = f
		c.open++
		c.opens.Add(1)
	} else if h.elem != nil {
		c.idle.Remove(h.elem)
		h.elem = nil
	}
	h.users++
	return h.f, nil
}

func (h *fileHandle) release() {
	c := h.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	h.users--
	if h.users > 0 || h.f == nil {
		return
	}
	if h.closed {
		h.f.Close()
		h.f = nil
		c.open--
		return
	}
	h.elem = c.idle.PushBack(h)
	// Back within capacity once the users that pushed the cache over it
	// are done.
	for c.open > c.capacity && c.evictLocked() {
	}
}

// close forbids further use; the file closes now if idle, else when its
// last user releases it.
func (h *fileHandle) close() {
	c := h.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.f != nil && h.users == 0 {
		if h.elem != nil {
			c.idle.Remove(h.elem)
			h.elem = nil
		}
		h.f.Close()
		h.f = nil
		c.open--
	}
}
