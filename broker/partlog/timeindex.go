package partlog

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// The .timeindex file is an append-only array of 12-byte entries
// (big-endian timestamp int64, relative offset uint32), in Kafka's
// convention: an entry (t, r) says that t is the largest batch max timestamp
// in the segment so far and that the batch ending with offset segmentBase+r
// is the first to carry it, so every batch up to that one has a max
// timestamp <= t. Entries go with .index entries when the largest timestamp
// grew since the last entry, and one more when the segment is sealed (at
// roll and close), so the last entry holds the segment's largest timestamp.
// Timestamps and offsets strictly increase. Frozen format.
//
// Older Tributary versions wrote (largest timestamp of the batches before
// the entry's, base offset of the next batch); such files fail the checks of
// decodeTimeIndex or checkIndexes and are rebuilt.
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
		if n := len(es); n > 0 && (e.ts <= es[n-1].ts || e.rel <= es[n-1].rel) {
			return nil, fmt.Errorf("entry %d (%d@%d) does not follow the previous one", n, e.ts, e.rel)
		}
		es = append(es, e)
	}
	return es, nil
}

// searchStart returns the relative offset where a search for the first
// batch with max timestamp >= ts may start: just after the batch of the last
// entry whose timestamp is below ts (that batch and all before it are older
// than ts), or 0.
func searchStart(es []timeEntry, ts int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return es[i].ts >= ts })
	if i == 0 {
		return 0
	}
	return int64(es[i-1].rel) + 1
}
