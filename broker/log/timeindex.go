package log

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// The .timeindex file is an append-only array of 12-byte entries
// (big-endian timestamp int64, relative offset uint32). An entry (t, r) says:
// every batch with base offset below segmentBase+r has a max timestamp <= t.
// Entries are written together with .index entries and, at roll and close, one
// more for the segment's end, so the last entry holds the segment's largest
// timestamp. Timestamps and offsets never decrease. Frozen format.
const timeIndexEntrySize = 12

type timeEntry struct {
	ts  int64
	rel uint32
}

func (e timeEntry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
	return binary.BigEndian.AppendUint32(b, e.rel)
}

func decodeTimeIndex(b []byte) ([]timeEntry, error) {
	if len(b)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("size %d not a multiple of %d", len(b), timeIndexEntrySize)
	}
	es := make([]timeEntry, 0, len(b)/timeIndexEntrySize)
	for i := 0; i < len(b); i += timeIndexEntrySize {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(b[i:])), rel: binary.BigEndian.Uint32(b[i+8:])}
		if n := len(es); n > 0 && (e.ts < es[n-1].ts || e.rel <= es[n-1].rel) {
			return nil, fmt.Errorf("entry %d (%d@%d) goes backwards", n, e.ts, e.rel)
		}
		es = append(es, e)
	}
	return es, nil
}

// lastBelow returns the relative offset of the last entry whose timestamp is
// below ts: all batches before it are older than ts, so a search for the
// first batch with max timestamp >= ts may start there.
func lastBelow(es []timeEntry, ts int64) uint32 {
	i := sort.Search(len(es), func(i int) bool { return es[i].ts >= ts })
	if i == 0 {
		return 0
	}
	return es[i-1].rel
}
