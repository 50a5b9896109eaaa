package loader

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"

	"github.com/tributary/tributary/hours"
)

// Codec names an Avro container file block codec.
type Codec string

// Codecs the loader writes (the Avro specification's names).
const (
	CodecDeflate Codec = "deflate"
	CodecSnappy  Codec = "snappy"
	CodecNull    Codec = "null"
)

// blockBytes is the uncompressed size at which a block is written: large
// enough for deflate to find redundancy across records, small enough that
// readers stream.
const blockBytes = 256 << 10

// avroFormat is the loader's Avro object container file format.
type avroFormat struct{ codec Codec }

func (avroFormat) format() hours.Format { return hours.Avro }

func (a avroFormat) newWriter(w io.Writer, schemaText string) (fileWriter, error) {
	return newOCFWriter(w, schemaText, a.codec)
}

// ocfWriter writes an Avro object container file whose records are
// already Avro binary datums of the file's schema (validated against it):
// the loader copies the producer's bytes into blocks instead of decoding
// and re-encoding them, which is byte-identical for readers and several
// times cheaper. The layout is the Avro specification's: magic "Obj\x01",
// a metadata map (avro.schema, avro.codec), a 16-byte sync marker, then
// blocks of (count, size, data, sync).
type ocfWriter struct {
	w       io.Writer
	codec   Codec
	sync    [16]byte
	block   bytes.Buffer
	count   int64
	scratch bytes.Buffer
	deflate *flate.Writer
	err     error
}

func newOCFWriter(w io.Writer, schemaText string, codec Codec) (*ocfWriter, error) {
	o := &ocfWriter{w: w, codec: codec}
	if _, err := rand.Read(o.sync[:]); err != nil {
		return nil, err
	}
	var h []byte
	h = append(h, 'O', 'b', 'j', 1)
	h = appendLong(h, 2)
	h = appendString(h, "avro.schema")
	h = appendString(h, schemaText)
	h = appendString(h, "avro.codec")
	h = appendString(h, string(codec))
	h = appendLong(h, 0)
	h = append(h, o.sync[:]...)
	if codec == CodecDeflate {
		fw, err := flate.NewWriter(&o.scratch, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		o.deflate = fw
	}
	o.write(h)
	return o, o.err
}

func (o *ocfWriter) write(b []byte) {
	if o.err != nil {
		return
	}
	_, o.err = o.w.Write(b)
}

// Append adds one datum.
func (o *ocfWriter) Append(datum []byte) error {
	o.block.Write(datum)
	o.count++
	if o.block.Len() >= blockBytes {
		return o.flush()
	}
	return o.err
}

func (o *ocfWriter) flush() error {
	if o.count == 0 || o.err != nil {
		return o.err
	}
	data := o.block.Bytes()
	switch o.codec {
	case CodecDeflate:
		o.scratch.Reset()
		o.deflate.Reset(&o.scratch)
		o.deflate.Write(data)
		if err := o.deflate.Close(); err != nil {
			return err
		}
		data = o.scratch.Bytes()
	case CodecSnappy:
		// Avro's snappy blocks carry the CRC-32 of the uncompressed bytes.
		crc := crc32.ChecksumIEEE(data)
		out := s2.EncodeSnappy(o.scratch.AvailableBuffer()[:0], data)
		out = binary.BigEndian.AppendUint32(out, crc)
		data = out
	}
	var h [2 * binary.MaxVarintLen64]byte
	hdr := appendLong(appendLong(h[:0], o.count), int64(len(data)))
	o.write(hdr)
	o.write(data)
	o.write(o.sync[:])
	o.block.Reset()
	o.count = 0
	return o.err
}

// Close writes the last block; it does not close the underlying writer.
func (o *ocfWriter) Close() error { return o.flush() }

func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64((v<<1)^(v>>63)))
}

func appendString(b []byte, s string) []byte {
	b = appendLong(b, int64(len(s)))
	return append(b, s...)
}

// parseCodec checks a codec name from the configuration.
func parseCodec(s string) (Codec, error) {
	switch Codec(s) {
	case "":
		return CodecDeflate, nil
	case CodecDeflate, CodecSnappy, CodecNull:
		return Codec(s), nil
	}
	return "", fmt.Errorf("%w: codec %q: want deflate, snappy or null", ErrInvalidConfig, s)
}
