package partlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// producerWindow is how many recent batches per producer are remembered for
// duplicate detection: Kafka's max.in.flight.requests.per.connection limit
// for idempotent producers.
const producerWindow = 5

type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTs                   int64
}

type producerEntry struct {
	epoch int16
	// lastAppendMs is the broker's clock (Config.Now) at the producer's last
	// append, not the batch timestamp: a mirror re-producing old events keeps
	// their CreateTime, and expiring by it would forget a live producer at
	// once and let its retries in as new batches.
	lastAppendMs int64
	batches      []producerBatch // oldest first, at most producerWindow
	// txnFirst is the first offset of the producer's ongoing transaction,
	// -1 when none; coordEpoch the coordinator epoch of its last marker,
	// -1 before any (see txn.go).
	txnFirst   int64
	coordEpoch int32
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, txnFirst: -1, coordEpoch: -1}
}

func (e *producerEntry) clone() *producerEntry {
	return &producerEntry{epoch: e.epoch, lastAppendMs: e.lastAppendMs, batches: append([]producerBatch(nil), e.batches...),
		txnFirst: e.txnFirst, coordEpoch: e.coordEpoch}
}

// producerState is the idempotence state of one partition, guarded by the
// Log's appender lock.
type producerState struct {
	m map[int64]*producerEntry
	// ongoing maps the producers with an ongoing transaction to its first
	// offset: the entries of m whose txnFirst >= 0.
	ongoing map[int64]int64
	// expireMs is Config.ProducerIDExpiration in milliseconds; negative
	// means producers are never forgotten for being idle.
	expireMs int64
}

func newProducerState(expireMs int64) *producerState {
	return &producerState{m: map[int64]*producerEntry{}, ongoing: map[int64]int64{}, expireMs: expireMs}
}

// expired reports whether e has been idle for the expiration time at nowMs.
// A clock that went backwards expires nothing, and neither does a producer
// with an ongoing transaction (as in Kafka: its marker is still to come).
func (ps *producerState) expired(e *producerEntry, nowMs int64) bool {
	return ps.expireMs >= 0 && nowMs-e.lastAppendMs >= ps.expireMs && e.txnFirst < 0
}

// lookup returns the live entry of pid, nil if unknown or expired. It is the
// only expiry work on the append path: expired entries are treated as absent
// here and deleted later by removeStale.
func (ps *producerState) lookup(pid, nowMs int64) *producerEntry {
	e := ps.m[pid]
	if e == nil || ps.expired(e, nowMs) {
		return nil
	}
	return e
}

// removeStale forgets producers idle for the expiration time and, as Kafka
// does when the log start offset moves, producers whose last batch lies
// entirely below logStart (their batches are gone, so duplicate detection
// for them could only return offsets that no longer exist). It returns the
// number removed.
func (ps *producerState) removeStale(nowMs, logStart int64) int {
	n := 0
	for pid, e := range ps.m {
		below := len(e.batches) > 0 && e.batches[len(e.batches)-1].lastOffset < logStart && e.txnFirst < 0
		if below || ps.expired(e, nowMs) {
			delete(ps.m, pid)
			delete(ps.ongoing, pid)
			n++
		}
	}
	return n
}

// incSeq adds n to a sequence number the way Kafka does: past MaxInt32 it
// wraps to 0, not to a negative number.
func incSeq(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// check decides what to do with the idempotent batch h, consulting overlay
// (entries already updated by earlier batches of the same Append) first. It
// returns the original batch if h is a retry of one of the last five.
func (ps *producerState) check(overlay map[int64]*producerEntry, h batchHeader, nowMs int64) (*producerBatch, error) {
	if h.producerID < 0 {
		return nil, nil
	}
	e := overlay[h.producerID]
	if e == nil {
		e = ps.lookup(h.producerID, nowMs)
	}
	if e == nil {
		// Unknown producer: its state may have expired or been lost with
		// deleted segments, so any sequence is accepted (Kafka >= 2.5).
		return nil, nil
	}
	if h.isControl() {
		return nil, checkMarker(e, h)
	}
	if err := checkTxnData(e, h); err != nil {
		return nil, err
	}
	lastSeq := incSeq(h.baseSequence, h.lastOffsetDelta)
	switch {
	case h.producerEpoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.producerID, h.producerEpoch, e.epoch)
	case h.producerEpoch > e.epoch:
		if h.baseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, h.producerID, h.producerEpoch, h.baseSequence)
		}
		return nil, nil
	}
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSeq == h.baseSequence && b.lastSeq == lastSeq {
			return b, nil
		}
	}
	if n := len(e.batches); n > 0 {
		if want := incSeq(e.batches[n-1].lastSeq, 1); h.baseSequence != want {
			return nil, fmt.Errorf("%w: producer %d epoch %d sequence %d, expected %d", ErrOutOfOrderSequence, h.producerID, h.producerEpoch, h.baseSequence, want)
		}
	}
	return nil, nil
}

// update records the batch h (with its assigned offsets), appended at
// nowMs, in dst. For a control batch it reports the transaction the marker
// completed (see txn.go).
func update(dst map[int64]*producerEntry, src *producerState, h batchHeader, nowMs int64) (completedTxn, bool) {
	if h.producerID < 0 {
		return completedTxn{}, false
	}
	e := dst[h.producerID]
	if e == nil {
		if old := src.lookup(h.producerID, nowMs); old != nil {
			e = old.clone()
		} else {
			e = newProducerEntry(h.producerEpoch)
		}
		dst[h.producerID] = e
	}
	e.lastAppendMs = max(e.lastAppendMs, nowMs)
	if h.isControl() {
		return updateTxnMarker(dst, src, e, h)
	}
	if h.transactional() && e.txnFirst < 0 {
		e.txnFirst = h.baseOffset
	}
	if h.producerEpoch != e.epoch {
		e.epoch, e.batches = h.producerEpoch, e.batches[:0]
	}
	e.batches = append(e.batches, producerBatch{
		firstSeq: h.baseSequence, lastSeq: incSeq(h.baseSequence, h.lastOffsetDelta),
		firstOffset: h.baseOffset, lastOffset: h.lastOffset(), maxTs: h.maxTimestamp,
	})
	if len(e.batches) > producerWindow {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-producerWindow:]...)
	}
	return completedTxn{}, false
}

func (ps *producerState) apply(overlay map[int64]*producerEntry) {
	for pid, e := range overlay {
		ps.m[pid] = e
		if e.txnFirst >= 0 {
			ps.ongoing[pid] = e.txnFirst
		} else {
			delete(ps.ongoing, pid)
		}
	}
}

// Snapshot file "<20-digit offset>.tributary-producers": the producer state
// after every batch below offset. (Older versions named it "<offset>.snapshot",
// as Kafka names its own, different, producer snapshots; Open renames them.) Frozen format, big-endian:
//
//	magic "TRPS" | version uint16 = 3 | producers uint32 |
//	  per producer: id int64 | epoch int16 | lastAppendMs int64 |
//	    txnFirstOffset int64 | coordinatorEpoch int32 | batches uint8 |
//	    per batch: firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | maxTs int64
//	| crc32c uint32 over everything before it
//
// txnFirstOffset is the first offset of the producer's ongoing transaction
// (-1: none), coordinatorEpoch that of its last transaction marker (-1:
// none). Versions 2 and 1 (still read) lack both (no transaction was ever
// ongoing then); version 1 also lacks lastAppendMs, its producers are taken
// as having appended when the snapshot is loaded, so an upgrade never
// forgets a producer early.
const (
	snapshotMagic     = "TRPS"
	snapshotVersion   = 3
	snapshotVersionV2 = 2
	snapshotVersionV1 = 1
)

func (ps *producerState) encode() []byte {
	ids := make([]int64, 0, len(ps.m))
	for id := range ps.m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := append([]byte(nil), snapshotMagic...)
	b = binary.BigEndian.AppendUint16(b, snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := ps.m[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastAppendMs))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = binary.BigEndian.AppendUint32(b, uint32(pb.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(pb.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.lastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.maxTs))
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeSnapshot parses a snapshot; loadMs stands in for the last append
// time of producers in a version 1 snapshot.
func decodeSnapshot(b []byte, expireMs, loadMs int64) (*producerState, error) {
	if len(b) < 14 || string(b[:4]) != snapshotMagic {
		return nil, fmt.Errorf("not a snapshot")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("checksum mismatch")
	}
	v := binary.BigEndian.Uint16(body[4:])
	if v != snapshotVersion && v != snapshotVersionV2 && v != snapshotVersionV1 {
		return nil, fmt.Errorf("version %d", v)
	}
	n := binary.BigEndian.Uint32(body[6:])
	p := body[10:]
	ps := newProducerState(expireMs)
	for range n {
		if len(p) < 11 {
			return nil, fmt.Errorf("truncated")
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(p[8:])))
		e.lastAppendMs = loadMs
		p = p[10:]
		if v >= 2 {
			if len(p) < 9 {
				return nil, fmt.Errorf("truncated")
			}
			e.lastAppendMs = int64(binary.BigEndian.Uint64(p))
			p = p[8:]
		}
		if v >= 3 {
			if len(p) < 13 {
				return nil, fmt.Errorf("truncated")
			}
			e.txnFirst, e.coordEpoch = int64(binary.BigEndian.Uint64(p)), int32(binary.BigEndian.Uint32(p[8:]))
			p = p[12:]
		}
		nb := int(p[0])
		p = p[1:]
		if nb > producerWindow || len(p) < nb*32 {
			return nil, fmt.Errorf("bad batch count %d", nb)
		}
		for range nb {
			e.batches = append(e.batches, producerBatch{
				firstSeq: int32(binary.BigEndian.Uint32(p)), lastSeq: int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(p[8:])), lastOffset: int64(binary.BigEndian.Uint64(p[16:])),
				maxTs: int64(binary.BigEndian.Uint64(p[24:])),
			})
			p = p[32:]
		}
		ps.m[id] = e
		if e.txnFirst >= 0 {
			ps.ongoing[id] = e.txnFirst
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(p))
	}
	return ps, nil
}

// listOffsetFiles returns the offsets of the files in dir with the suffix, ascending.
func listOffsetFiles(names []string, suffix string) []int64 {
	var out []int64
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, suffix)
		if !ok || len(stem) != 20 {
			continue
		}
		off, err := strconv.ParseInt(stem, 10, 64)
		if err == nil && off >= 0 {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// legacySnapshotSuffix is the name older versions gave snapshot files.
const legacySnapshotSuffix = ".snapshot"

// migrateLegacySnapshots renames "<offset>.snapshot" files of our format
// (they start with snapshotMagic) to the current name, so an upgrade loses
// no producer state; any other file by that name (Kafka's) is left alone.
// A snapshot already under the new name wins over a legacy one. It returns
// the directory's names after the renames and whether there were legacy
// snapshots, which means older versions wrote this directory.
func migrateLegacySnapshots(dir string, names []string) ([]string, bool, error) {
	offs := listOffsetFiles(names, legacySnapshotSuffix)
	if len(offs) == 0 {
		return names, false, nil
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	found := false
	for _, off := range offs {
		old := filepath.Join(dir, fmt.Sprintf("%020d%s", off, legacySnapshotSuffix))
		if !isOurSnapshot(old) {
			continue
		}
		found = true
		delete(have, filepath.Base(old))
		if have[filepath.Base(snapshotPath(dir, off))] {
			if err := os.Remove(old); err != nil {
				return nil, true, err
			}
			continue
		}
		if err := os.Rename(old, snapshotPath(dir, off)); err != nil {
			return nil, true, err
		}
		have[filepath.Base(snapshotPath(dir, off))] = true
	}
	if found {
		if err := syncDir(dir); err != nil {
			return nil, true, err
		}
	}
	out := make([]string, 0, len(have))
	for n := range have {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, found, nil
}

func isOurSnapshot(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [len(snapshotMagic)]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == snapshotMagic
}

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

func (ps *producerState) writeSnapshot(dir string, offset int64) error {
	return writeFileAtomic(snapshotPath(dir, offset), ps.encode())
}

// loadSnapshot returns the newest valid snapshot at or below maxOffset and
// its offset, removing snapshots above maxOffset (they describe a log tail
// that recovery truncated) and unreadable ones.
func loadSnapshot(dir string, names []string, maxOffset, expireMs, nowMs int64) (*producerState, int64, bool) {
	offs := listOffsetFiles(names, snapshotSuffix)
	for i := len(offs) - 1; i >= 0; i-- {
		path := filepath.Join(dir, fmt.Sprintf("%020d%s", offs[i], snapshotSuffix))
		if offs[i] > maxOffset {
			os.Remove(path)
			continue
		}
		b, err := os.ReadFile(path)
		if err == nil {
			if ps, derr := decodeSnapshot(b, expireMs, nowMs); derr == nil {
				return ps, offs[i], true
			}
		}
		os.Remove(path)
	}
	return newProducerState(expireMs), 0, false
}

// pruneSnapshots keeps the two newest snapshots.
func pruneSnapshots(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	offs := listOffsetFiles(names, snapshotSuffix)
	for i := 0; i+2 < len(offs); i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("%020d%s", offs[i], snapshotSuffix)))
	}
}
