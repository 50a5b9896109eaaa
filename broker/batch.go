package broker

import (
	"encoding/binary"
	"errors"
)

// Offsets into a magic-2 record batch header (frozen by the Kafka protocol).
const (
	batchLengthOffset    = 8
	batchMagicOffset     = 16
	batchRecordsOffset   = 57
	batchHeaderSize      = 61
	batchOverheadNoLen   = 12 // baseOffset + batchLength precede the counted bytes
	currentMagic         = 2
	batchProducerIDOff   = 43
	batchProducerEpochOf = 51
)

var errBadBatchFraming = errors.New("record batch framing is invalid")

// batchInfo is what Produce needs from a batch header without decoding
// records: its size and record count.
type batchInfo struct {
	size    int
	records int32
	magic   int8
}

// scanBatches walks the batch headers in a Produce partition's records. It
// checks only framing (lengths add up, header complete); the storage engine
// checks CRCs.
func scanBatches(records []byte, each func(batchInfo)) error {
	if len(records) == 0 {
		return errBadBatchFraming
	}
	for len(records) > 0 {
		if len(records) < batchHeaderSize {
			return errBadBatchFraming
		}
		length := int32(binary.BigEndian.Uint32(records[batchLengthOffset:]))
		size := int(length) + batchOverheadNoLen
		if length < batchHeaderSize-batchOverheadNoLen || size > len(records) {
			return errBadBatchFraming
		}
		each(batchInfo{
			size:    size,
			records: int32(binary.BigEndian.Uint32(records[batchRecordsOffset:])),
			magic:   int8(records[batchMagicOffset]),
		})
		records = records[size:]
	}
	return nil
}
