package partlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// logStartFile holds a log start offset moved into a segment by
// DeleteRecordsBefore: offset int64 | crc32c uint32 of those 8 bytes,
// big-endian, as recovery-point (frozen). Retention alone never needs it:
// its start is the first segment's base offset.
const logStartFile = "log-start-offset"

// DeleteRecordsBefore moves the log start offset up to offset (Kafka's
// DeleteRecords, maybeIncrementLogStartOffset): offsets below it are no
// longer read (ErrOffsetOutOfRange), the segments wholly below it are
// deleted, and the offset is kept in the partition's log-start-offset file
// so that it survives a restart. An offset at or below the current start
// changes nothing; one past EndOffset is ErrOffsetOutOfRange. It returns
// the log start offset after the call.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if offset <= l.start.Load() {
		return l.start.Load(), nil
	}
	if end := l.end.Load(); offset > end {
		return l.start.Load(), fmt.Errorf("%w: offset %d is past the log end %d", ErrOffsetOutOfRange, offset, end)
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	// Persisted before it is served: a restart never goes back below it.
	if err := l.files.essential(func() error { return writeFileAtomic(filepath.Join(l.dir, logStartFile), b) }); err != nil {
		return l.start.Load(), err
	}
	segs := *l.segs.Load()
	n := 0
	for n < len(segs)-1 && segs[n+1].base <= offset {
		n++
	}
	// Start first, as in ApplyRetention: a reader that sees the new start
	// never looks for a deleted segment.
	l.start.Store(offset)
	var err error
	if n > 0 {
		kept := append([]*segment(nil), segs[n:]...)
		l.segs.Store(&kept)
		for _, s := range segs[:n] {
			if rerr := s.remove(); rerr != nil && err == nil {
				err = rerr
			}
			s.release()
		}
	}
	l.epochs.truncateFromStart(offset)
	if perr := l.files.essential(l.epochs.persist); perr != nil && err == nil {
		err = perr
	}
	l.logger.Info("log start offset moved by DeleteRecords", "log_start_offset", offset, "deleted_segments", n)
	l.expireProducers(n)
	return offset, err
}

// loadedStart is the log start offset at Open: the first segment's base,
// or the persisted DeleteRecords offset when that is higher (never past
// end).
func loadedStart(dir string, firstBase, end int64) int64 {
	b, err := os.ReadFile(filepath.Join(dir, logStartFile))
	if err != nil || len(b) != 12 || crc32.Checksum(b[:8], castagnoli) != binary.BigEndian.Uint32(b[8:]) {
		return firstBase
	}
	return min(max(firstBase, int64(binary.BigEndian.Uint64(b))), end)
}
