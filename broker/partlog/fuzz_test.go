package partlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzValidateBatch: validation never panics, rejects with ErrCorruptBatch,
// and what it accepts is a sequence of batches whose headers kmsg decodes to
// the same counts, and which stays valid once a base offset is patched in.
func FuzzValidateBatch(f *testing.F) {
	one := logtest.NewBatch([]byte("hello"))
	many := logtest.Batch(logtest.Options{Timestamp: 1700000000000, Idempotent: true, ProducerID: 9, BaseSequence: 3},
		logtest.Record{Key: []byte("k"), Value: []byte("v1")}, logtest.Record{Value: bytes.Repeat([]byte("z"), 300), TimestampDelta: 9})
	f.Add(one)
	f.Add(many)
	f.Add(append(append([]byte(nil), one...), many...))
	f.Add(logtest.Batch(logtest.Options{Attributes: 1, RawRecords: []byte{0x1f, 0x8b, 8, 0, 0, 0}, RecordCount: 4}))
	f.Add(one[:batchHeaderSize])
	f.Add([]byte{})
	bad := append([]byte(nil), many...)
	bad[40] ^= 1
	f.Add(bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		nb, nr, err := ValidateBatch(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("error %v is not ErrCorruptBatch", err)
			}
			return
		}
		records := 0
		rest := b
		for i := 0; i < nb; i++ {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(rest); err != nil {
				t.Fatalf("accepted batch %d that kmsg cannot decode: %v", i, err)
			}
			if rb.Magic != 2 || rb.NumRecords <= 0 || rb.LastOffsetDelta != rb.NumRecords-1 {
				t.Fatalf("accepted batch %d with magic %d count %d delta %d", i, rb.Magic, rb.NumRecords, rb.LastOffsetDelta)
			}
			records += int(rb.NumRecords)
			size := 12 + int(rb.Length)
			binary.BigEndian.PutUint64(rest, 12345) // what Append does
			rest = rest[size:]
		}
		if len(rest) != 0 || records != nr {
			t.Fatalf("accepted %d batches / %d records but headers cover %d bytes less, %d records", nb, nr, len(rest), records)
		}
		if _, _, err := ValidateBatch(b); err != nil {
			t.Fatalf("patching the base offset broke the batch: %v", err)
		}
	})
}
