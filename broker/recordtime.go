package broker

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchCodecMask selects the compression codec of the batch attributes
// (frozen by the protocol: 1 gzip, 2 snappy, 3 lz4, 4 zstd).
const batchCodecMask = 0x07

var errRecordFraming = errors.New("record framing is invalid")

// recordAtOrAfter returns the offset and timestamp of the first record,
// in offset order, of the batch at the start of data whose timestamp is at
// least ts (Kafka's ListOffsets semantics within the first batch whose max
// timestamp is >= ts). In a LogAppendTime batch every record carries the
// batch's max timestamp. ok is false when no record qualifies. dec is
// franz-go's decompressor, which reads gzip, snappy (raw, and the xerial
// framing of Java producers), lz4 frames and zstd.
func recordAtOrAfter(data []byte, ts int64, dec kgo.Decompressor) (offset, timestamp int64, ok bool, err error) {
	if len(data) < batchHeaderSize {
		return 0, 0, false, errBadBatchFraming
	}
	size := int64(binary.BigEndian.Uint32(data[batchLengthOffset:])) + batchOverheadNoLen
	if size < batchHeaderSize || size > int64(len(data)) {
		return 0, 0, false, errBadBatchFraming
	}
	var batch kmsg.RecordBatch
	if err := batch.UnsafeReadFrom(data[:size]); err != nil {
		return 0, 0, false, fmt.Errorf("decoding record batch: %w", err)
	}
	if batch.Attributes&attrLogAppendTime != 0 {
		if batch.MaxTimestamp >= ts && batch.NumRecords > 0 {
			return batch.FirstOffset, batch.MaxTimestamp, true, nil
		}
		return 0, 0, false, nil
	}
	records := batch.Records
	if codec := kgo.CompressionCodecType(batch.Attributes & batchCodecMask); codec != kgo.CodecNone {
		if records, err = dec.Decompress(records, codec); err != nil {
			return 0, 0, false, fmt.Errorf("decompressing record batch (codec %d): %w", codec, err)
		}
	}
	for range batch.NumRecords {
		length, n := binary.Varint(records)
		if n <= 0 || length < 0 || int64(n)+length > int64(len(records)) {
			return 0, 0, false, errRecordFraming
		}
		var r kmsg.Record
		if err := r.UnsafeReadFrom(records[:int64(n)+length]); err != nil {
			return 0, 0, false, fmt.Errorf("decoding record: %w", err)
		}
		records = records[int64(n)+length:]
		if t := batch.FirstTimestamp + r.TimestampDelta64; t >= ts {
			return batch.FirstOffset + int64(r.OffsetDelta), t, true, nil
		}
	}
	return 0, 0, false, nil
}
