package partlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Batch attribute bits (frozen by the protocol).
const (
	attrCodecMask     = 0x07 // 1 gzip, 2 snappy, 3 lz4, 4 zstd
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// record is one record of a batch as the cleaner needs it: its encoded
// bytes (length prefix included, copied unchanged into a rewritten batch,
// which keeps the base offset and base timestamp its deltas refer to).
type record struct {
	raw         []byte
	offsetDelta int32
	tsDelta     int64
	key         []byte // nil: no key
	nullValue   bool   // a tombstone when it has a key
}

// parseRecords splits the (decompressed) records of a batch.
func parseRecords(b []byte, count int32, out []record) ([]record, error) {
	for i := int32(0); i < count; i++ {
		r, n, err := parseRecord(b)
		if err != nil {
			return out, fmt.Errorf("record %d: %w", i, err)
		}
		out = append(out, r)
		b = b[n:]
	}
	return out, nil
}

func parseRecord(b []byte) (record, int, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return record{}, 0, fmt.Errorf("bad record length")
	}
	total := n + int(length)
	body := b[n:total]
	r := record{raw: b[:total]}
	p := 1 // attributes
	if len(body) < p {
		return record{}, 0, fmt.Errorf("short record")
	}
	var k int
	r.tsDelta, k = binary.Varint(body[p:])
	if k <= 0 {
		return record{}, 0, fmt.Errorf("bad timestamp delta")
	}
	p += k
	od, k := binary.Varint(body[p:])
	if k <= 0 {
		return record{}, 0, fmt.Errorf("bad offset delta")
	}
	r.offsetDelta = int32(od)
	p += k
	keyLen, k := binary.Varint(body[p:])
	if k <= 0 || keyLen > int64(len(body)-p-k) {
		return record{}, 0, fmt.Errorf("bad key length")
	}
	p += k
	if keyLen >= 0 {
		r.key = body[p : p+int(keyLen)]
		p += int(keyLen)
	}
	valLen, k := binary.Varint(body[p:])
	if k <= 0 || valLen > int64(len(body)-p-k) {
		return record{}, 0, fmt.Errorf("bad value length")
	}
	r.nullValue = valLen < 0
	return r, total, nil
}

// codecs compresses and decompresses record batches for the cleaner, with
// franz-go's codecs (the same as the clients').
type codecs struct {
	dec  kgo.Decompressor
	mu   sync.Mutex
	comp map[int]kgo.Compressor
	buf  bytes.Buffer
}

func newCodecs() *codecs {
	return &codecs{dec: kgo.DefaultDecompressor(), comp: map[int]kgo.Compressor{}}
}

// records returns the batch's records, decompressed.
func (c *codecs) records(batch []byte) ([]byte, error) {
	codec := int(batch[offAttributes+1]) & attrCodecMask
	body := batch[batchHeaderSize:]
	if codec == 0 {
		return body, nil
	}
	out, err := c.dec.Decompress(body, kgo.CompressionCodecType(codec))
	if err != nil {
		return nil, fmt.Errorf("decompressing a batch (codec %d): %w", codec, err)
	}
	return out, nil
}

func (c *codecs) compress(codec int, raw []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	comp, ok := c.comp[codec]
	if !ok {
		var cc kgo.CompressionCodec
		switch codec {
		case 1:
			cc = kgo.GzipCompression()
		case 2:
			cc = kgo.SnappyCompression()
		case 3:
			cc = kgo.Lz4Compression()
		case 4:
			cc = kgo.ZstdCompression()
		default:
			return nil, fmt.Errorf("unknown compression codec %d", codec)
		}
		var err error
		if comp, err = kgo.DefaultCompressor(cc); err != nil {
			return nil, err
		}
		c.comp[codec] = comp
	}
	c.buf.Reset()
	out, got := comp.Compress(&c.buf, raw)
	if int(got) != codec {
		return nil, fmt.Errorf("compressing with codec %d gave codec %d", codec, got)
	}
	return bytes.Clone(out), nil
}

// rebuildBatch returns batch with only the kept records: base offset, last
// offset delta, base timestamp, leader epoch, attributes (codec included)
// and producer id, epoch and base sequence stay, so offsets keep their
// values and an idempotent producer's sequence state stays valid.
func (c *codecs) rebuildBatch(batch []byte, h batchHeader, kept []record) ([]byte, error) {
	var raw []byte
	maxTs := h.maxTimestamp
	logAppend := batch[offAttributes+1]&attrLogAppendTime != 0
	if !logAppend {
		maxTs = -1
	}
	for _, r := range kept {
		raw = append(raw, r.raw...)
		if !logAppend {
			maxTs = max(maxTs, h.baseTimestamp+r.tsDelta)
		}
	}
	if codec := int(batch[offAttributes+1]) & attrCodecMask; codec != 0 {
		var err error
		if raw, err = c.compress(codec, raw); err != nil {
			return nil, err
		}
	}
	out := make([]byte, batchHeaderSize, batchHeaderSize+len(raw))
	copy(out, batch[:batchHeaderSize])
	out = append(out, raw...)
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-batchLogOverhead))
	binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(out[offRecordCount:], uint32(len(kept)))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out, nil
}
