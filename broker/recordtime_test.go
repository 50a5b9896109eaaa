package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// Timestamps of one batch, out of order as a producer may send them.
var unorderedTimestamps = []int64{1000, 3000, 1500, 4000, 2000}

// codecCases are the compression codecs a batch may use; xerial is snappy
// in the framing of the Java producer.
var codecCases = []struct {
	name   string
	codec  kgo.CompressionCodec
	attr   int8 // the codec's value in the batch attributes
	xerial bool
}{
	{"none", kgo.NoCompression(), 0, false},
	{"gzip", kgo.GzipCompression(), 1, false},
	{"snappy", kgo.SnappyCompression(), 2, false},
	{"snappy-xerial", kgo.SnappyCompression(), 2, true},
	{"lz4", kgo.Lz4Compression(), 3, false},
	{"zstd", kgo.ZstdCompression(), 4, false},
}

// xerialFrame wraps one raw snappy block in the xerial stream format:
// magic, version 1, compatible version 1, then length-prefixed blocks.
func xerialFrame(block []byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
	return append(out, block...)
}

// timedBatch builds a batch at base offset base whose records carry the
// timestamps, compressed with codec.
func timedBatch(t *testing.T, base int64, timestamps []int64, codec kgo.CompressionCodec, xerial bool, attrs int16) []byte {
	t.Helper()
	var recs []byte
	maxTS := timestamps[0]
	for i, ts := range timestamps {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = ts - timestamps[0]
		r.Value = fmt.Appendf(nil, "v%d", i)
		// kmsg writes Length as given: size the body first (a zero
		// length is one varint byte).
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
		maxTS = max(maxTS, ts)
	}
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	if comp != nil {
		out, used := comp.Compress(new(bytes.Buffer), recs)
		if xerial {
			out = xerialFrame(out)
		}
		recs = append([]byte(nil), out...)
		attrs |= int16(used)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(timestamps) - 1), FirstTimestamp: timestamps[0], MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(timestamps)), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-batchOverheadNoLen))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], 0) // unchecked here
	return out
}

func TestRecordAtOrAfter(t *testing.T) {
	dec := kgo.DefaultDecompressor()
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			data := timedBatch(t, 100, unorderedTimestamps, cc.codec, cc.xerial, 0)
			if got := int8(binary.BigEndian.Uint16(data[batchAttributesOff:]) & batchCodecMask); got != cc.attr {
				t.Fatalf("batch attributes codec %d, want %d", got, cc.attr)
			}
			// A following batch must not confuse the lookup.
			data = append(data, timedBatch(t, 105, []int64{9000}, kgo.NoCompression(), false, 0)...)
			for _, tt := range []struct {
				target, off, ts int64
				ok              bool
			}{
				{0, 100, 1000, true},
				{1000, 100, 1000, true},
				{1001, 101, 3000, true},
				{1500, 101, 3000, true}, // offset order, not the closest timestamp
				{3001, 103, 4000, true},
				{4000, 103, 4000, true},
				{4001, 0, 0, false},
			} {
				off, ts, ok, err := recordAtOrAfter(data, tt.target, dec)
				if err != nil || ok != tt.ok || off != tt.off || ts != tt.ts {
					t.Errorf("t=%d: (%d, %d, %v, %v), want (%d, %d, %v)", tt.target, off, ts, ok, err, tt.off, tt.ts, tt.ok)
				}
			}
		})
	}
	t.Run("LogAppendTime", func(t *testing.T) {
		data := timedBatch(t, 7, unorderedTimestamps, kgo.NoCompression(), false, attrLogAppendTime)
		binary.BigEndian.PutUint64(data[batchMaxTimestampOff:], 50_000)
		off, ts, ok, err := recordAtOrAfter(data, 20_000, dec)
		if err != nil || !ok || off != 7 || ts != 50_000 {
			t.Errorf("got (%d, %d, %v, %v), want the first record with the batch's append time", off, ts, ok, err)
		}
	})
	for name, data := range map[string][]byte{
		"short":            make([]byte, 20),
		"length past data": timedBatch(t, 0, unorderedTimestamps, kgo.NoCompression(), false, 0)[:70],
		"bad gzip": func() []byte {
			d := timedBatch(t, 0, unorderedTimestamps, kgo.GzipCompression(), false, 0)
			d[batchRecordsOffset+4] ^= 0xff
			return d
		}(),
	} {
		if _, _, _, err := recordAtOrAfter(data, 0, dec); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestListOffsetsExactTimestamp: ListOffsets by time answers the first
// record at or after t, not the start of its batch, for batches compressed
// with kgo's compressors in every codec and with out-of-order timestamps.
//
// The batch layout is part of what is tested, so the test writes the
// batches itself, one Produce request each: a producing client decides its
// own batch boundaries (kgo, even with manual flushing, may send a record
// produced right after a Flush in a batch of its own while its drain loop
// is still running).
func TestListOffsetsExactTimestamp(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := testenv.Context(t, time.Minute)
	for _, cc := range codecCases {
		if cc.xerial {
			continue // TestRecordAtOrAfter covers the framing
		}
		t.Run(cc.name, func(t *testing.T) {
			topic := "ts-" + cc.name
			if err := b.CreateTopic(ctx, topic, 1); err != nil {
				t.Fatal(err)
			}
			conn := dialRaw(t, b.Addr())
			for i, batch := range []struct {
				base       int64
				timestamps []int64
			}{{0, unorderedTimestamps}, {5, []int64{5000, 4500, 6000}}} {
				data := timedBatch(t, 0, batch.timestamps, cc.codec, false, 0)
				binary.BigEndian.PutUint32(data[batchCRCOffset:], crc32.Checksum(data[batchAttributesOff:], castagnoli))
				resp := conn.roundTrip(produceRequest(9, 1, topic, 0, data)).(*kmsg.ProduceResponse)
				rp := resp.Topics[0].Partitions[0]
				if rp.ErrorCode != 0 || rp.BaseOffset != batch.base {
					t.Fatalf("batch %d: error %d base offset %d, want base offset %d", i, rp.ErrorCode, rp.BaseOffset, batch.base)
				}
			}
			p := b.partitions.Leader(topic, 0)
			if off, _, _ := p.Log().OffsetForTimestamp(5500); off != 5 {
				t.Fatalf("batch layout: the second batch starts at %d, want 5", off)
			}
			v, err := p.Log().Read(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			data, err := v.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			codec := int8(binary.BigEndian.Uint16(data[batchAttributesOff:]) & batchCodecMask)
			v.Release()
			if codec != cc.attr {
				t.Fatalf("stored batch codec %d, want %d", codec, cc.attr)
			}
			cl := newClient(t, b.Addr())
			adm := kadm.NewClient(cl)
			for _, tt := range []struct{ target, off, ts int64 }{
				{999, 0, 1000},
				{1500, 1, 3000},
				{3500, 3, 4000},
				{4001, 5, 5000},
				{4600, 5, 5000},
				{5001, 7, 6000},
				{6001, 8, -1}, // kadm reports the end offset when no record is that recent
			} {
				listed, err := adm.ListOffsetsAfterMilli(ctx, tt.target, topic)
				if err != nil {
					t.Fatal(err)
				}
				lo, ok := listed.Lookup(topic, 0)
				if !ok || lo.Err != nil || lo.Offset != tt.off || (tt.ts >= 0 && lo.Timestamp != tt.ts) {
					t.Errorf("t=%d: offset %d timestamp %d (err %v), want %d at %d", tt.target, lo.Offset, lo.Timestamp, lo.Err, tt.off, tt.ts)
				}
			}
		})
	}
}
