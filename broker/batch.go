package broker

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
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
	batchCRCOffset       = 17
	batchAttributesOff   = 21
	batchMaxTimestampOff = 35
	// attrLogAppendTime is the timestamp-type bit of the attributes.
	attrLogAppendTime = 0x08
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stampLogAppendTime marks every batch of records (framing already
// checked by scanBatches) as LogAppendTime with max timestamp now, and
// recomputes its CRC, as Kafka does for topics with
// message.timestamp.type=LogAppendTime. Record timestamps are left alone:
// readers take the batch's max timestamp for every record of such a batch.
// A batch whose CRC was wrong is left as it is, for the log to reject.
func stampLogAppendTime(records []byte, now int64) {
	for len(records) >= batchHeaderSize {
		size := int(binary.BigEndian.Uint32(records[batchLengthOffset:])) + batchOverheadNoLen
		batch := records[:size]
		records = records[size:]
		if crc32.Checksum(batch[batchAttributesOff:], castagnoli) != binary.BigEndian.Uint32(batch[batchCRCOffset:]) {
			continue
		}
		attrs := binary.BigEndian.Uint16(batch[batchAttributesOff:])
		binary.BigEndian.PutUint16(batch[batchAttributesOff:], attrs|attrLogAppendTime)
		binary.BigEndian.PutUint64(batch[batchMaxTimestampOff:], uint64(now))
		binary.BigEndian.PutUint32(batch[batchCRCOffset:], crc32.Checksum(batch[batchAttributesOff:], castagnoli))
	}
}

// batchLeaderEpochOffset is where a batch header holds its partition leader
// epoch: after base offset (8) and length (4), before the CRC'd part.
const batchLeaderEpochOffset = 12

// stampLeaderEpoch writes epoch into every batch's partitionLeaderEpoch
// field. The field is outside the CRC, so the batches stay valid. Framing
// was checked by scanBatches.
func stampLeaderEpoch(records []byte, epoch int32) {
	for len(records) >= batchHeaderSize {
		size := int(binary.BigEndian.Uint32(records[batchLengthOffset:])) + batchOverheadNoLen
		binary.BigEndian.PutUint32(records[batchLeaderEpochOffset:], uint32(epoch))
		records = records[size:]
	}
}
