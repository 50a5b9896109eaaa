package kafkatest

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Batch builds a valid magic-2 record batch (length and CRC-32C set) of
// records with key "k" and the given values, timestamps from ts, for raw
// Produce requests. pid, epoch and seq are the producer id, epoch and
// first sequence (-1, -1, -1 for a non-idempotent batch).
func Batch(ts int64, pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = int64(i)
		r.Key = []byte("k")
		r.Value = []byte(v)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + int64(len(values)-1),
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}
