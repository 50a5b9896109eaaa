package log

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// The .index file is a sparse, append-only array of 8-byte entries
// (big-endian relative offset uint32, position uint32): the batch whose base
// offset is segmentBase+relative starts at byte position of the .log file.
// An entry is added before a batch once IndexIntervalBytes have been written
// since the previous entry. Frozen format.
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

// floorByOffset returns the position of the last entry whose relative offset
// is <= rel, or 0 (the segment start).
func floorByOffset(es []offsetEntry, rel uint32) (uint32, int64) {
	i := sort.Search(len(es), func(i int) bool { return es[i].rel > rel })
	if i == 0 {
		return 0, 0
	}
	return es[i-1].rel, int64(es[i-1].pos)
}

// floorByPosition returns the position of the last entry at or before pos, or 0.
func floorByPosition(es []offsetEntry, pos int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return int64(es[i].pos) > pos })
	if i == 0 {
		return 0
	}
	return int64(es[i-1].pos)
}

func readWhole(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	return b, err
}
