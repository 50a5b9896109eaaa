package partlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// txnIndexSuffix names a segment's aborted-transaction index, Kafka's
// ".txnindex": one 34-byte entry per transaction aborted by a marker in the
// segment, in marker order, big-endian (frozen; Kafka's AbortedTxn):
//
//	version int16 = 0 | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
//
// The file exists only for segments holding ABORT markers.
const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

func encodeTxnIndex(entries []AbortedTxn) []byte {
	b := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, a := range entries {
		b = binary.BigEndian.AppendUint16(b, txnIndexVersion)
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
	}
	return b
}

// decodeTxnIndex parses a .txnindex file of the segment [base, next); it
// stops at the first entry that is partial, of another version or out of
// the segment or of order, and says so.
func decodeTxnIndex(b []byte, base, next int64) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for len(b) > 0 {
		if len(b) < txnIndexEntrySize {
			return out, fmt.Errorf("%d trailing bytes", len(b))
		}
		if v := binary.BigEndian.Uint16(b); v != txnIndexVersion {
			return out, fmt.Errorf("entry %d: version %d", len(out), v)
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if a.LastOffset < base || a.LastOffset >= next || a.FirstOffset > a.LastOffset ||
			len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset {
			return out, fmt.Errorf("entry %d: offsets %d..%d outside segment [%d, %d) or out of order", len(out), a.FirstOffset, a.LastOffset, base, next)
		}
		out = append(out, a)
		b = b[txnIndexEntrySize:]
	}
	return out, nil
}

// writeTxnIndex replaces the .txnindex of the segment at base with entries,
// or removes it when there are none.
func writeTxnIndex(dir string, base int64, entries []AbortedTxn) error {
	path := segmentPath(dir, base, txnIndexSuffix)
	if len(entries) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return writeFileAtomic(path, encodeTxnIndex(entries))
}

// loadTxnIndexes reads the .txnindex files of segs (whose .log files exist)
// into l.aborted; entries with markers at or past from are left out (the
// producer replay from there adds them again). Files of missing segments
// are removed. A damaged file keeps its good entries and is logged;
// recovery replays only the unflushed tail, so what it lost stays lost.
func (l *Log) loadTxnIndexes(names []string, segs []*segment, from int64) {
	have := map[int64]int{}
	for i, s := range segs {
		have[s.base] = i
	}
	var all []AbortedTxn
	for _, base := range listOffsetFiles(names, txnIndexSuffix) {
		i, ok := have[base]
		if !ok {
			os.Remove(segmentPath(l.dir, base, txnIndexSuffix))
			continue
		}
		next := int64(1<<63 - 1)
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		b, err := os.ReadFile(segmentPath(l.dir, base, txnIndexSuffix))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			l.logger.Warn("cannot read aborted transaction index", "segment", base, "err", err)
			continue
		}
		entries, derr := decodeTxnIndex(b, base, next)
		if derr != nil {
			l.logger.Warn("damaged aborted transaction index; keeping its first entries", "segment", base, "entries", len(entries), "err", derr)
		}
		for _, a := range entries {
			if a.LastOffset < from {
				all = append(all, a)
			}
		}
	}
	l.txnMu.Lock()
	l.aborted = all
	l.txnMu.Unlock()
}

// writeTxnIndexesFrom rewrites the .txnindex files of the segments of segs
// from the one holding off on, from memory (after a replay rebuilt them).
func (l *Log) writeTxnIndexesFrom(segs []*segment, off int64) error {
	var errs []error
	for i, s := range segs {
		next := int64(1<<63 - 1)
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		if next <= off {
			continue
		}
		entries := l.abortedIn(s.base, next)
		errs = append(errs, l.files.essential(func() error { return writeTxnIndex(l.dir, s.base, entries) }))
	}
	return errors.Join(errs...)
}
