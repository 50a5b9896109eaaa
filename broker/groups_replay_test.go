package broker

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/group"
)

// TestReplayOffsetsBatches: the coordinator's batches read back record by
// record (tombstones as null values), records before the requested offset
// are skipped, and a compressed batch written by another producer is
// decompressed.
func TestReplayOffsetsBatches(t *testing.T) {
	first := encodeOffsetsBatch([]group.Record{
		{Key: []byte("k0"), Value: []byte("v0")},
		{Key: []byte("k1")},
	}, 1000, nil)
	// A gzip batch of two records at offsets 2 and 3.
	var raw []byte
	for i, kv := range [][2]string{{"k2", "v2"}, {"k3", "v3"}} {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key, r.Value = []byte(kv[0]), []byte(kv[1])
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		raw = r.AppendTo(raw)
	}
	comp, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	zipped, codec := comp.Compress(new(bytes.Buffer), raw)
	if codec != kgo.CodecGzip {
		t.Fatalf("codec %v", codec)
	}
	batch := kmsg.RecordBatch{FirstOffset: 2, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 2, Records: bytes.Clone(zipped)}
	second := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(second[batchLengthOffset:], uint32(len(second)-batchOverheadNoLen))
	binary.BigEndian.PutUint32(second[batchCRCOffset:], crc32.Checksum(second[batchAttributesOff:], castagnoli))
	data := append(bytes.Clone(first), second...)

	for _, tc := range []struct {
		from int64
		want []string
	}{
		{0, []string{"k0=v0", "k1=<nil>", "k2=v2", "k3=v3"}},
		{1, []string{"k1=<nil>", "k2=v2", "k3=v3"}},
		{3, []string{"k3=v3"}},
	} {
		var got []string
		next, err := replayBatches(data, tc.from, kgo.DefaultDecompressor(), func(r group.Record) error {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			got = append(got, string(r.Key)+"="+v)
			return nil
		})
		if err != nil || next != 4 {
			t.Fatalf("from %d: next %d, err %v", tc.from, next, err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("from %d: %v, want %v", tc.from, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("from %d: %v, want %v", tc.from, got, tc.want)
			}
		}
	}
}
