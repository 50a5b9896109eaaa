package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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
	epoch   int16
	batches []producerBatch // oldest first, at most producerWindow
}

func (e *producerEntry) clone() *producerEntry {
	return &producerEntry{epoch: e.epoch, batches: append([]producerBatch(nil), e.batches...)}
}

// producerState is the idempotence state of one partition, guarded by the
// Log's appender lock.
type producerState struct {
	m map[int64]*producerEntry
}

func newProducerState() *producerState { return &producerState{m: map[int64]*producerEntry{}} }

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
func (ps *producerState) check(overlay map[int64]*producerEntry, h batchHeader) (*producerBatch, error) {
	if h.producerID < 0 {
		return nil, nil
	}
	e := overlay[h.producerID]
	if e == nil {
		e = ps.m[h.producerID]
	}
	if e == nil {
		// Unknown producer: its state may have expired or been lost with
		// deleted segments, so any sequence is accepted (Kafka >= 2.5).
		return nil, nil
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

// update records the appended batch h (with its assigned offsets) in dst.
func update(dst map[int64]*producerEntry, src *producerState, h batchHeader) {
	if h.producerID < 0 {
		return
	}
	e := dst[h.producerID]
	if e == nil {
		if old := src.m[h.producerID]; old != nil {
			e = old.clone()
		} else {
			e = &producerEntry{epoch: h.producerEpoch}
		}
		dst[h.producerID] = e
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
}

func (ps *producerState) apply(overlay map[int64]*producerEntry) {
	for pid, e := range overlay {
		ps.m[pid] = e
	}
}

// Snapshot file "<20-digit offset>.snapshot": the producer state after every
// batch below offset. Frozen format, big-endian:
//
//	magic "TRPS" | version uint16 = 1 | producers uint32 |
//	  per producer: id int64 | epoch int16 | batches uint8 |
//	    per batch: firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | maxTs int64
//	| crc32c uint32 over everything before it
const (
	snapshotMagic   = "TRPS"
	snapshotVersion = 1
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

func decodeSnapshot(b []byte) (*producerState, error) {
	if len(b) < 14 || string(b[:4]) != snapshotMagic {
		return nil, fmt.Errorf("not a snapshot")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("checksum mismatch")
	}
	if v := binary.BigEndian.Uint16(body[4:]); v != snapshotVersion {
		return nil, fmt.Errorf("version %d", v)
	}
	n := binary.BigEndian.Uint32(body[6:])
	p := body[10:]
	ps := newProducerState()
	for range n {
		if len(p) < 11 {
			return nil, fmt.Errorf("truncated")
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(p[8:]))}
		nb := int(p[10])
		p = p[11:]
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

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

func (ps *producerState) writeSnapshot(dir string, offset int64) error {
	return writeFileAtomic(snapshotPath(dir, offset), ps.encode())
}

// loadSnapshot returns the newest valid snapshot at or below maxOffset and
// its offset, removing snapshots above maxOffset (they describe a log tail
// that recovery truncated) and unreadable ones.
func loadSnapshot(dir string, names []string, maxOffset int64) (*producerState, int64, bool) {
	offs := listOffsetFiles(names, snapshotSuffix)
	for i := len(offs) - 1; i >= 0; i-- {
		path := filepath.Join(dir, fmt.Sprintf("%020d%s", offs[i], snapshotSuffix))
		if offs[i] > maxOffset {
			os.Remove(path)
			continue
		}
		b, err := os.ReadFile(path)
		if err == nil {
			if ps, derr := decodeSnapshot(b); derr == nil {
				return ps, offs[i], true
			}
		}
		os.Remove(path)
	}
	return newProducerState(), 0, false
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
