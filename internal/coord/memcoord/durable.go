package memcoord

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"

	"github.com/tributary/tributary/internal/coord"
)

// File names in a durable server's directory (frozen: a restarted process
// reads what the previous one wrote).
const (
	// SnapshotFile holds the whole tree of persistent nodes as of a
	// sequence number, replaced atomically.
	SnapshotFile = "snapshot.json"
	// TxnLogFile holds one record per committed write after that
	// snapshot, each fsynced before the write returns.
	TxnLogFile = "txnlog"
	// lockFile is flocked while a server has the directory open.
	lockFile = "lock"
)

// snapshotFormat is the version of the snapshot and log records (frozen).
const snapshotFormat = 1

// logRecordHeader is a record's length then its CRC-32C, big-endian.
const logRecordHeader = 8

// compactAt is the txn log size past which the next write first writes a
// snapshot and empties the log (at least this, or twice the last snapshot,
// so that a large tree is not rewritten at every few writes).
const compactAt = 4 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// persistedNode is one persistent node in a snapshot or log record.
type persistedNode struct {
	Path    string    `json:"path"`
	Data    []byte    `json:"data,omitempty"`
	Version int32     `json:"version"`
	Created int32     `json:"children_created"` // node.stat.CVersion: creations only
	Ctime   time.Time `json:"ctime"`
	Mtime   time.Time `json:"mtime"`
}

type snapshot struct {
	Format int             `json:"format"`
	Seq    int64           `json:"seq"`
	Nodes  []persistedNode `json:"nodes"`
}

// logRecord is one committed write: the new state of every persistent node
// it touched and the paths it deleted.
type logRecord struct {
	Seq     int64           `json:"seq"`
	Put     []persistedNode `json:"put,omitempty"`
	Deleted []string        `json:"deleted,omitempty"`
}

// store is a durable server's files. Guarded by Server.mu.
type store struct {
	dir     string
	lock    *os.File
	log     *os.File
	logSize int64
	seq     int64
	snapLen int64
}

// Open returns a server whose persistent nodes live in dir, as ZooKeeper
// keeps its tree in its snapshot and transaction log: the tree left by the
// last server on dir is loaded (persistent nodes with their data, versions
// and sequence counters; no session survives, so no ephemeral node does),
// every write is in the log, fsynced, before it returns, and the log is
// folded into a new snapshot, written atomically, as it grows. A record
// torn by a crash is dropped (its write never returned). dir is created
// if missing; a second server cannot open it while one has it
// (ErrLocked). Close releases it.
func Open(dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memcoord: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("memcoord: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
	}
	s := NewServer()
	st := &store{dir: dir, lock: lock}
	if err := s.load(st); err != nil {
		_ = lock.Close()
		return nil, err
	}
	s.store = st
	return s, nil
}

// Close writes a snapshot and releases the directory of a server from
// Open; later writes fail with coord.ErrClosed (reads still answer). It is
// a no-op on a server from NewServer, and idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.store
	if st == nil {
		return nil
	}
	s.store, s.closed = nil, true
	err := s.compact(st)
	return errors.Join(err, st.log.Close(), st.lock.Close())
}

// load reads the snapshot and replays the log over it, truncating a torn
// tail, and opens the log for appending.
func (s *Server) load(st *store) error {
	data, err := os.ReadFile(filepath.Join(st.dir, SnapshotFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("memcoord: %w", err)
	default:
		var snap snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, SnapshotFile, err)
		}
		if snap.Format != snapshotFormat {
			return fmt.Errorf("%w: %s: format %d, want %d", ErrCorrupt, SnapshotFile, snap.Format, snapshotFormat)
		}
		for _, n := range snap.Nodes {
			if err := s.put(n); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrCorrupt, SnapshotFile, err)
			}
		}
		st.seq, st.snapLen = snap.Seq, int64(len(data))
	}
	path := filepath.Join(st.dir, TxnLogFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("memcoord: %w", err)
	}
	good, err := s.replay(f, st)
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("memcoord: %s: %w", TxnLogFile, err)
	}
	st.log, st.logSize = f, good
	return nil
}

// replay applies the log's records after the snapshot's sequence number
// and returns the length of its valid prefix.
func (s *Server) replay(f *os.File, st *store) (int64, error) {
	r := bufio.NewReader(f)
	var good int64
	hdr := make([]byte, logRecordHeader)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return good, nil // the end, or a torn header
		}
		n := binary.BigEndian.Uint32(hdr)
		if n > 1<<30 {
			return good, nil
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil || crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
			return good, nil // torn by a crash: that write never returned
		}
		var rec logRecord
		if err := json.Unmarshal(body, &rec); err != nil {
			return good, fmt.Errorf("%w: record at %d: %v", ErrCorrupt, good, err)
		}
		if rec.Seq > st.seq {
			if err := s.apply(rec); err != nil {
				return good, fmt.Errorf("%w: record %d: %v", ErrCorrupt, rec.Seq, err)
			}
			st.seq = rec.Seq
		}
		good += logRecordHeader + int64(n)
	}
}

// apply replays one record: deletions deepest first, then puts parents
// first.
func (s *Server) apply(rec logRecord) error {
	dels := slices.Clone(rec.Deleted)
	slices.SortFunc(dels, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, p := range dels {
		if p == "/" {
			continue
		}
		if parent := s.lookup(coord.Parent(p)); parent != nil {
			delete(parent.children, coord.Base(p))
		}
	}
	puts := slices.Clone(rec.Put)
	slices.SortFunc(puts, func(a, b persistedNode) int { return strings.Count(a.Path, "/") - strings.Count(b.Path, "/") })
	for _, n := range puts {
		if err := s.put(n); err != nil {
			return err
		}
	}
	return nil
}

// put sets a persistent node's data and stat, creating it under its
// existing parent if needed; its children are kept.
func (s *Server) put(pn persistedNode) error {
	if err := coord.ValidatePath(pn.Path); err != nil {
		return err
	}
	n := s.lookup(pn.Path)
	if n == nil {
		parent := s.lookup(coord.Parent(pn.Path))
		if parent == nil {
			return fmt.Errorf("%s: no parent", pn.Path)
		}
		n = &node{children: map[string]*node{}}
		parent.children[coord.Base(pn.Path)] = n
	}
	n.data = pn.Data
	n.stat = coord.Stat{Version: pn.Version, CVersion: pn.Created, Created: pn.Ctime, Modified: pn.Mtime}
	return nil
}

func persisted(p string, n *node) persistedNode {
	return persistedNode{Path: p, Data: n.data, Version: n.stat.Version, Created: n.stat.CVersion,
		Ctime: n.stat.Created, Mtime: n.stat.Modified}
}

// persist appends the record of a committed write (the persistent nodes
// at t's dirty paths as they are now) and fsyncs it. Called under s.mu
// before the write's watches fire; on an error the caller rolls back.
func (s *Server) persist(t *txn) error {
	if s.closed {
		return fmt.Errorf("memcoord: %w", coord.ErrClosed)
	}
	st := s.store
	if st == nil || len(t.dirty) == 0 {
		return nil
	}
	rec := logRecord{Seq: st.seq + 1}
	seen := map[string]bool{}
	for _, p := range t.dirty {
		if seen[p] {
			continue
		}
		seen[p] = true
		switch n := s.lookup(p); {
		case n == nil:
			rec.Deleted = append(rec.Deleted, p)
		case n.stat.EphemeralOwner == 0:
			rec.Put = append(rec.Put, persisted(p, n))
		}
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("memcoord: %w", err)
	}
	buf := make([]byte, logRecordHeader, logRecordHeader+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	binary.BigEndian.PutUint32(buf[4:], crc32.Checksum(body, crcTable))
	buf = append(buf, body...)
	if _, err := st.log.Write(buf); err != nil {
		// A partial record is cut off so that the next one lines up.
		_ = st.log.Truncate(st.logSize)
		_, _ = st.log.Seek(st.logSize, io.SeekStart)
		return fmt.Errorf("memcoord: writing %s: %w", TxnLogFile, err)
	}
	if err := st.log.Sync(); err != nil {
		return fmt.Errorf("memcoord: syncing %s: %w", TxnLogFile, err)
	}
	st.seq++
	st.logSize += int64(len(buf))
	if st.logSize > max(compactAt, 2*st.snapLen) {
		if err := s.compact(st); err != nil {
			// The write is logged; the log just stays long.
			return nil
		}
	}
	return nil
}

// compact writes the tree as a snapshot (atomically: a temporary file,
// fsynced, renamed over the old one) and then empties the log; a crash
// between the two leaves records the snapshot already holds, which replay
// skips by sequence number.
func (s *Server) compact(st *store) error {
	snap := snapshot{Format: snapshotFormat, Seq: st.seq}
	s.walk("/", s.root, func(p string, n *node) {
		if n.stat.EphemeralOwner == 0 {
			snap.Nodes = append(snap.Nodes, persisted(p, n))
		}
	})
	// Parents before children: a parent's path sorts before its
	// descendants'.
	slices.SortFunc(snap.Nodes, func(a, b persistedNode) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(snap); err != nil {
		return fmt.Errorf("memcoord: %w", err)
	}
	if err := renameio.WriteFile(filepath.Join(st.dir, SnapshotFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("memcoord: writing %s: %w", SnapshotFile, err)
	}
	if d, err := os.Open(st.dir); err == nil {
		_ = d.Sync() // the rename itself
		_ = d.Close()
	}
	st.snapLen = int64(buf.Len())
	if err := st.log.Truncate(0); err != nil {
		return fmt.Errorf("memcoord: emptying %s: %w", TxnLogFile, err)
	}
	if _, err := st.log.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("memcoord: %w", err)
	}
	st.logSize = 0
	return st.log.Sync()
}
