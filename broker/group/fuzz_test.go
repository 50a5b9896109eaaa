package group

import (
	"errors"
	"testing"
)

// FuzzDecodeRecord: any bytes in the offsets topic decode or fail with
// ErrCorruptRecord, never panic; what decodes re-encodes to the same key.
func FuzzDecodeRecord(f *testing.F) {
	r := offsetRecord("g", "t", 1, committed{Offset: 5, LeaderEpoch: 2, Metadata: "m", CommitTime: 9})
	f.Add(r.Key, r.Value)
	f.Add(r.Key, []byte(nil))
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{1, 2, 3})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := decodeRecord(Record{Key: key, Value: value})
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v is not ErrCorruptRecord", err)
			}
			return
		}
		if d.isOffset && key[1] == offsetKeyVersion {
			if got := offsetKey(d.group, d.topic, d.partition); string(got) != string(key[:len(got)]) {
				t.Fatalf("key %v re-encodes to %v", key, got)
			}
		}
	})
}
