// Package logtest builds magic-2 Kafka record batches for tests of the log
// and of the broker. Batches are encoded with kmsg and carry a correct
// CRC-32C, so the log accepts them as a producer's would be.
package logtest

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one record of a test batch.
type Record struct {
	Key, Value []byte
	Headers    []kmsg.Header
	// TimestampDelta is added to the batch's Timestamp for this record.
	TimestampDelta int64
}

// Options are the batch header fields a test may want to set. The zero value
// is a non-idempotent batch (producer ID -1) with timestamp 0.
type Options struct {
	Timestamp     int64 // base timestamp, ms
	ProducerID    int64 // 0 means -1 (not idempotent) unless Idempotent is set
	Idempotent    bool
	ProducerEpoch int16
	BaseSequence  int32
	// Attributes are stored as given (e.g. a compression codec in the low
	// bits: the records are then expected to be compressed already).
	Attributes int16
	// RawRecords, if set, replaces the encoded records (e.g. compressed bytes);
	// RecordCount must then be given.
	RawRecords  []byte
	RecordCount int32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// NewBatch returns an uncompressed, non-idempotent batch holding one record
// per value, with timestamp 0.
func NewBatch(values ...[]byte) []byte {
	rs := make([]Record, len(values))
	for i, v := range values {
		rs[i] = Record{Value: v}
	}
	return Batch(Options{}, rs...)
}

// Batch encodes records into a magic-2 record batch with base offset 0.
func Batch(o Options, records ...Record) []byte {
	raw, count := o.RawRecords, o.RecordCount
	maxTs := o.Timestamp
	if raw == nil {
		for i, r := range records {
			rec := kmsg.Record{
				TimestampDelta64: r.TimestampDelta,
				OffsetDelta:      int32(i),
				Key:              r.Key,
				Value:            r.Value,
				Headers:          r.Headers,
			}
			if r.Key == nil {
				rec.Key = nil
			}
			body := rec.AppendTo(nil) // Length 0 encodes as one byte
			rec.Length = int32(len(body) - 1)
			raw = rec.AppendTo(raw)
			maxTs = max(maxTs, o.Timestamp+r.TimestampDelta)
		}
		count = int32(len(records))
	}
	pid := o.ProducerID
	if !o.Idempotent && pid == 0 {
		pid = -1
	}
	seq := o.BaseSequence
	epoch := o.ProducerEpoch
	if pid < 0 {
		seq, epoch = -1, -1
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(49 + len(raw)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           o.Attributes,
		LastOffsetDelta:      count - 1,
		FirstTimestamp:       o.Timestamp,
		MaxTimestamp:         maxTs,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           count,
		Records:              raw,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

// Values decodes the record values of an uncompressed batch sequence (as
// Read returns it), for tests that check content. It panics on malformed
// input, which a test should never produce.
func Values(batches []byte) (offsets []int64, values [][]byte) {
	for len(batches) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(batches); err != nil {
			panic(err)
		}
		raw := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			var r kmsg.Record
			n, err := readRecord(&r, raw)
			if err != nil {
				panic(err)
			}
			raw = raw[n:]
			offsets = append(offsets, rb.FirstOffset+int64(r.OffsetDelta))
			values = append(values, r.Value)
		}
		batches = batches[12+int(rb.Length):]
	}
	return offsets, values
}

// readRecord decodes one length-prefixed record and returns its total size.
func readRecord(r *kmsg.Record, b []byte) (int, error) {
	l, n := binary.Varint(b)
	if n <= 0 || int(l)+n > len(b) {
		return 0, errShort
	}
	if err := r.ReadFrom(b[:n+int(l)]); err != nil {
		return 0, err
	}
	return n + int(l), nil
}

type strErr string

func (e strErr) Error() string { return string(e) }

const errShort = strErr("logtest: truncated record")
