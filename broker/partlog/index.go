package partlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// The .index file is a sparse, append-only array of 8-byte entries
// (big-endian relative offset uint32, position uint32), in Kafka's
// convention: the batch starting at byte position of the .log file ends
// with offset segmentBase+relative (its last offset). An entry is added for
// a batch once IndexIntervalBytes have been written since the previous
// entry. Frozen format.
//
// Older Tributary versions indexed a batch by its base offset; such files
// fail checkIndexes and are rebuilt.
const offsetIndexEntrySize = 8

type offsetEntry struct {
	rel uint32
	pos uint32
}

func (e offsetEntry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, e.rel)
	return binary.BigEndian.AppendUint32(b, e.pos)
}

// decodeOffsetIndex parses and sanity-checks an .index file's contents
// against the size of its .log file. A file that fails is rebuilt by the
// caller; the checks are cheap enough to run on every load.
func decodeOffsetIndex(b []byte, logSize int64) ([]offsetEntry, error) {
	if len(b)%offsetIndexEntrySize != 0 {
		return nil, fmt.Errorf("size %d not a multiple of %d", len(b), offsetIndexEntrySize)
	}
	es := make([]offsetEntry, 0, len(b)/offsetIndexEntrySize)
	for i := 0; i < len(b); i += offsetIndexEntrySize {
		e := offsetEntry{rel: binary.BigEndian.Uint32(b[i:]), pos: binary.BigEndian.Uint32(b[i+4:])}
		if n := len(es); n > 0 && (e.rel <= es[n-1].rel || e.pos <= es[n-1].pos) {
			return nil, fmt.Errorf("entry %d (%d@%d) not after the previous one", n, e.rel, e.pos)
		}
		if e.pos == 0 || int64(e.pos)+batchHeaderSize > logSize {
			return nil, fmt.Errorf("entry %d position %d outside the segment (%d bytes)", len(es), e.pos, logSize)
		}
		es = append(es, e)
	}
	return es, nil
}

// floorByOffset returns the last entry whose relative offset is <= rel: the
// batch at its position ends at or before the wanted offset, so a walk for
// the batch holding rel may start there. ok is false if there is none (the
// walk starts at the segment start).
func floorByOffset(es []offsetEntry, rel uint32) (e offsetEntry, ok bool) {
	i := sort.Search(len(es), func(i int) bool { return es[i].rel > rel })
	if i == 0 {
		return offsetEntry{}, false
	}
	return es[i-1], true
}

// floorByPosition returns the position of the last entry at or before pos, or 0.
func floorByPosition(es []offsetEntry, pos int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return int64(es[i].pos) > pos })
	if i == 0 {
		return 0
	}
	return int64(es[i-1].pos)
}

// indexer decides the index entries of batches appended in order, as
// Kafka's LogSegment.append does: a batch written IndexIntervalBytes or more
// after the previous entry gets an .index entry (its last offset, its
// position) and, if the segment's largest timestamp grew since the last
// .timeindex entry, a .timeindex entry (that timestamp, the last offset of
// the first batch that carried it). seal adds the closing .timeindex entry.
// The appender, recovery and rebuilds all use it, so they agree byte for byte.
type indexer struct {
	base, interval int64
	lastIndexedPos int64 // position of the last .index entry, 0 if none
	maxTs          int64 // largest batch max timestamp so far, -1 if none
	maxTsOffset    int64 // last offset of the first batch with maxTs
	lastTimeTs     int64 // timestamp of the last .timeindex entry, -1 if none
	idx            []offsetEntry
	tidx           []timeEntry
}

func newIndexer(base, interval int64) indexer {
	return indexer{base: base, interval: interval, maxTs: -1, maxTsOffset: base, lastTimeTs: -1}
}

// add accounts for the batch h written at pos.
func (x *indexer) add(pos int64, h batchHeader) {
	if h.maxTimestamp > x.maxTs {
		x.maxTs, x.maxTsOffset = h.maxTimestamp, h.lastOffset()
	}
	if pos > 0 && pos-x.lastIndexedPos >= x.interval {
		x.idx = append(x.idx, offsetEntry{rel: uint32(h.lastOffset() - x.base), pos: uint32(pos)})
		x.maybeTimeEntry()
		x.lastIndexedPos = pos
	}
}

// maybeTimeEntry is Kafka's TimeIndex.maybeAppend: timestamps in a
// .timeindex strictly increase (DumpLogSegments reports anything else).
func (x *indexer) maybeTimeEntry() {
	if x.maxTs > x.lastTimeTs {
		x.tidx = append(x.tidx, timeEntry{ts: x.maxTs, rel: uint32(x.maxTsOffset - x.base)})
		x.lastTimeTs = x.maxTs
	}
}

// seal adds the closing .timeindex entry, so that the last one holds the
// segment's largest timestamp (Kafka's onBecomeInactiveSegment and close).
func (x *indexer) seal() { x.maybeTimeEntry() }

func readWhole(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	return b, err
}
