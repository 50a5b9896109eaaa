package loader

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/mirror/origin"
)

// maxOriginGaps bounds the gaps kept per source partition. Gaps that are
// never filled (source offsets without a record: transaction markers,
// compaction) would otherwise grow a manifest for ever; past the bound the
// lowest is forgotten, and a first copy arriving in it later would be
// dropped as the high-water mark alone drops it.
const maxOriginGaps = 64

// duplicate applies the mirror de-duplication: a record whose origin
// (source, partition, offset) is at or below the high-water mark of its
// source partition landed already, unless its offset is in a gap the mark
// jumped over. The mirror can deliver a source partition out of order: a
// record the target refused is sent again (from the mirror's last commit)
// after later records of its partition were produced and acknowledged
// (mirror.halt races the source loop, and franz-go starts a new sequence
// after a failed batch), so its first copy arrives behind higher offsets.
// Dropping it by the mark alone lost it (TestMirrorRefusedRecordRetried).
func (pl *partLoad) duplicate(r *kgo.Record) (bool, error) {
	for _, h := range r.Headers {
		if h.Key != origin.Header {
			continue
		}
		source, sp, off, err := origin.Parse(h.Value)
		if err != nil {
			pl.l.log.Warn("record with a malformed origin header loaded without de-duplication",
				"topic", pl.topic, "partition", pl.partition, "offset", r.Offset, "err", err)
			return false, nil
		}
		key := source + "/" + strconv.Itoa(int(sp))
		// A source partition never seen has landed nothing: all of it
		// below off is a gap (its first record may have been refused).
		hw, ok := pl.origins[key]
		if !ok {
			hw = -1
		}
		if off > hw {
			if off > hw+1 {
				pl.addGap(key, OffsetRange{First: hw + 1, Last: off - 1})
			}
			pl.origins[key] = off
			return false, nil
		}
		if pl.fillGap(key, off) {
			return false, nil
		}
		return !skipDedupOnce(), nil
	}
	return false, nil
}

// addGap records source offsets the mark jumped over; g is above every
// gap of key.
func (pl *partLoad) addGap(key string, g OffsetRange) {
	pl.setGaps(key, append(pl.gaps[key], g))
}

// fillGap removes off from the gaps of key and reports whether it was in
// one (the record is the first copy to land).
func (pl *partLoad) fillGap(key string, off int64) bool {
	gaps := pl.gaps[key]
	i, found := slices.BinarySearchFunc(gaps, off, func(g OffsetRange, off int64) int {
		switch {
		case g.Last < off:
			return -1
		case g.First > off:
			return 1
		}
		return 0
	})
	if !found {
		return false
	}
	g := gaps[i]
	var rest []OffsetRange
	if g.First < off {
		rest = append(rest, OffsetRange{First: g.First, Last: off - 1})
	}
	if off < g.Last {
		rest = append(rest, OffsetRange{First: off + 1, Last: g.Last})
	}
	pl.setGaps(key, slices.Replace(gaps, i, i+1, rest...))
	return true
}

func (pl *partLoad) setGaps(key string, gaps []OffsetRange) {
	if len(gaps) > maxOriginGaps {
		gaps = slices.Delete(gaps, 0, len(gaps)-maxOriginGaps)
	}
	if len(gaps) == 0 {
		delete(pl.gaps, key)
		return
	}
	pl.gaps[key] = gaps
}
