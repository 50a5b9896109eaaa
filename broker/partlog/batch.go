package partlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record batch (magic 2) header layout. Frozen: this is the Kafka wire and
// disk format.
const (
	batchHeaderSize  = 61 // bytes before the first record
	batchLogOverhead = 12 // baseOffset int64 + batchLength int32, not counted in batchLength
	minBatchLength   = batchHeaderSize - batchLogOverhead

	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	batchMagic = 2
)

// BatchHeaderSize is the size of a magic-2 record batch header.
const BatchHeaderSize = batchHeaderSize

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the part of a record batch header the log needs.
type batchHeader struct {
	baseOffset      int64
	size            int64 // whole batch, batchLogOverhead included
	leaderEpoch     int32 // partitionLeaderEpoch, stamped by the leader; -1 = none
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	recordCount     int32
	attributes      int16
	// control is set for a control batch whose marker record parsed (see
	// parseControl); only then are markerType and coordinatorEpoch valid.
	control          bool
	markerType       int16 // markerAbort or markerCommit
	coordinatorEpoch int32
}

func (h batchHeader) transactional() bool { return h.attributes&attrTransactional != 0 }
func (h batchHeader) isControl() bool     { return h.attributes&attrControl != 0 }

func (h batchHeader) lastOffset() int64 { return h.baseOffset + int64(h.lastOffsetDelta) }

// parseHeader decodes the fixed header fields of b, which must hold at least
// batchHeaderSize bytes. It checks nothing.
func parseHeader(b []byte) batchHeader {
	return batchHeader{
		baseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		size:            int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + batchLogOverhead,
		leaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		baseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		producerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		producerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		baseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		recordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
		attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
	}
}

// checkHeader validates the header fields of the batch starting at b (at
// least batchHeaderSize bytes) that can be checked without the body; avail is
// how many bytes of the batch may exist from b on.
func checkHeader(b []byte, avail int64) (batchHeader, error) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, fmt.Errorf("%d bytes, shorter than a batch header (%d)", len(b), batchHeaderSize)
	}
	h := parseHeader(b)
	switch {
	case b[offMagic] != batchMagic:
		return h, fmt.Errorf("magic %d, want %d", int8(b[offMagic]), batchMagic)
	case h.size-batchLogOverhead < minBatchLength:
		return h, fmt.Errorf("batch length %d below minimum %d", h.size-batchLogOverhead, minBatchLength)
	case h.size > avail:
		return h, fmt.Errorf("batch length %d overruns the %d bytes available", h.size-batchLogOverhead, avail-batchLogOverhead)
	case h.recordCount <= 0:
		return h, fmt.Errorf("record count %d", h.recordCount)
	case h.lastOffsetDelta < h.recordCount-1:
		// More is normal: the cleaner drops records, not offsets.
		return h, fmt.Errorf("last offset delta %d inconsistent with record count %d", h.lastOffsetDelta, h.recordCount)
	}
	if h.isControl() {
		// The marker's record follows the header; callers that hold only
		// the header leave control unset.
		h.markerType, h.coordinatorEpoch, h.control = parseControl(b, h)
	}
	return h, nil
}

// checkBatch validates the whole batch at the start of b (header and CRC-32C
// over attributes..end) and returns its header.
func checkBatch(b []byte) (batchHeader, error) {
	h, err := checkHeader(b, int64(len(b)))
	if err != nil {
		return h, err
	}
	want := binary.BigEndian.Uint32(b[offCRC:])
	if got := crc32.Checksum(b[offAttributes:h.size], castagnoli); got != want {
		return h, fmt.Errorf("crc32c %08x, header says %08x", got, want)
	}
	return h, nil
}

// validateBatches checks every batch in b, which must be exactly a sequence
// of whole batches, and returns their headers. cleaned allows batches with
// fewer records than offsets (a compacted leader's, for AppendReplica).
func validateBatches(b []byte, hs []batchHeader, cleaned bool) ([]batchHeader, error) {
	if len(b) == 0 {
		return hs, fmt.Errorf("%w: empty", ErrCorruptBatch)
	}
	for pos := 0; pos < len(b); {
		h, err := checkBatch(b[pos:])
		if err != nil {
			return hs, fmt.Errorf("%w: batch %d at byte %d: %v", ErrCorruptBatch, len(hs), pos, err)
		}
		if h.lastOffsetDelta != h.recordCount-1 && (!cleaned || h.recordCount < 0 || h.recordCount > h.lastOffsetDelta+1) {
			// Only a cleaned batch in a segment has fewer records than offsets.
			return hs, fmt.Errorf("%w: batch %d at byte %d: last offset delta %d inconsistent with record count %d",
				ErrCorruptBatch, len(hs), pos, h.lastOffsetDelta, h.recordCount)
		}
		hs = append(hs, h)
		pos += int(h.size)
	}
	return hs, nil
}

// ValidateBatch checks that b is one or more whole, concatenated magic-2
// record batches with correct lengths, CRCs and record counts, exactly as
// Append does before writing. It returns the number of batches and records.
// Errors wrap ErrCorruptBatch.
func ValidateBatch(b []byte) (batches, records int, err error) {
	hs, err := validateBatches(b, nil, false)
	if err != nil {
		return 0, 0, err
	}
	for _, h := range hs {
		records += int(h.recordCount)
	}
	return len(hs), records, nil
}
