package compact

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/xitongsys/parquet-go/common"
	"github.com/xitongsys/parquet-go/compress"
	"github.com/xitongsys/parquet-go/encoding"
	"github.com/xitongsys/parquet-go/layout"
	"github.com/xitongsys/parquet-go/parquet"
)

// Dictionary-encoded data pages, written here rather than by parquet-go:
// its writer encodes dictionary indices and levels as RLE runs only, each
// value of a run of one in 1+4 bytes (a fixed bit width of 32), which made
// dictionary columns larger than plain ones. These pages use the format's
// RLE/bit-packed hybrid at the narrowest width instead, so a column of
// eight distinct strings costs 3 bits a row before compression. The
// dictionary itself (parquet-go's DictRecType, one per column and row
// group) is still written by parquet-go when it closes the row group.

// Every data page is written here, with one compressor: zstd at
// klauspost's SpeedBetterCompression (about zstd level 7) rather than the
// SpeedDefault parquet-go registers, which stores pages of few repeats (hex
// ids, packed integers, doubles) nearly raw: 480,000 bytes of random hex
// came out of it at 437,293 bytes, at this level at 241,083 (4 bits a
// character). parquet-go still writes the dictionary pages, with its own.
var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.SpeedBetterCompression))

// compressPage compresses one page's data with codec.
func compressPage(b []byte, codec parquet.CompressionCodec) []byte {
	if codec == parquet.CompressionCodec_ZSTD {
		return zstdEncoder.EncodeAll(b, nil)
	}
	return compress.Compress(b, codec)
}

// valuePages encodes t's values with enc (PLAIN, DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT: parquet-go's encoders) in
// data pages of about pageSize bytes of values.
func valuePages(t *layout.Table, info *common.Tag, pageSize int32, codec parquet.CompressionCodec) ([]*layout.Page, int64) {
	var pages []*layout.Page
	var total int64
	funcs := common.FindFuncTable(t.Schema.Type, t.Schema.ConvertedType, t.Schema.LogicalType)
	enc := &layout.Page{Info: info, Schema: t.Schema}
	for i := 0; i < len(t.Values); {
		j := i
		var size int32
		var minVal, maxVal any
		var nulls int64
		var vals []any
		for j < len(t.Values) && size < pageSize {
			if t.DefinitionLevels[j] == t.MaxDefinitionLevel {
				v := t.Values[j]
				var n int32
				minVal, maxVal, n = minMaxSize(funcs, minVal, maxVal, v)
				size += n
				vals = append(vals, v)
			} else if t.Values[j] == nil {
				nulls++
			}
			j++
		}
		var raw []byte
		if t.MaxRepetitionLevel > 0 {
			raw = appendLevels(raw, t.RepetitionLevels[i:j], t.MaxRepetitionLevel)
		}
		if t.MaxDefinitionLevel > 0 {
			raw = appendLevels(raw, t.DefinitionLevels[i:j], t.MaxDefinitionLevel)
		}
		// A page of nulls only is PLAIN, which holds no values in no bytes:
		// parquet-go's delta encoders write nothing for none, not even the
		// header pyarrow and parquet-mr read first ("InitHeader EOF").
		pageEnc := parquet.Encoding_PLAIN
		if len(vals) > 0 {
			pageEnc = info.Encoding
			raw = append(raw, encodeValues(enc, vals)...)
		}
		p := finishPage(t, info, raw, compressPage(raw, codec), j-i, pageEnc, pageSize, codec, minVal, maxVal, nulls)
		total += int64(len(p.RawData))
		pages = append(pages, p)
		i = j
	}
	return pages, total
}

// encodeValues encodes vals as page p's encoding says. DELTA_BINARY_PACKED
// integers go through parquet-go/parquet-go's encoder: xitongsys's
// subtracts each miniblock's least delta in signed arithmetic, which
// wraps for deltas more than half the type's range apart (int min and
// max in one block) and writes too narrow a bit width, a page no reader
// decodes (pyarrow: "InitHeader EOF").
func encodeValues(p *layout.Page, vals []any) []byte {
	if p.Info.Encoding == parquet.Encoding_DELTA_BINARY_PACKED {
		var enc delta.BinaryPackedEncoding
		var b []byte
		var err error
		switch *p.Schema.Type {
		case parquet.Type_INT32:
			b, err = enc.EncodeInt32(nil, typed[int32](vals))
		case parquet.Type_INT64:
			b, err = enc.EncodeInt64(nil, typed[int64](vals))
		default:
			err = errNotInts
		}
		if err == nil {
			return b
		}
	}
	return p.EncodingValues(vals)
}

var errNotInts = errors.New("not an integer column")

// typed is vals (all of type T) as a []T.
func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

// trialSize is the compressed size of vals (column t's values) in one
// page of encoding enc, levels left out: enc's cost, to compare encodings.
func trialSize(vals []any, enc parquet.Encoding, t *layout.Table, codec parquet.CompressionCodec) int {
	if enc != parquet.Encoding_RLE_DICTIONARY {
		info := *t.Info
		info.Encoding = enc
		p := &layout.Page{Info: &info, Schema: t.Schema}
		return len(compressPage(encodeValues(p, vals), codec))
	}
	dict := layout.NewDictRec(*t.Schema.Type)
	idx := make([]int32, len(vals))
	for i, v := range vals {
		k, ok := dict.DictMap[dictKey(v)]
		if !ok {
			dict.DictSlice = append(dict.DictSlice, v)
			k = int32(len(dict.DictSlice) - 1)
			dict.DictMap[dictKey(v)] = k
		}
		idx[i] = k
	}
	width := max(1, bits.Len32(uint32(len(dict.DictSlice)-1)))
	page := appendHybrid([]byte{byte(width)}, idx, width)
	return len(compress.Compress(encoding.WritePlain(dict.DictSlice, *t.Schema.Type), codec)) + len(compressPage(page, codec))
}

// finishPage makes the data page of n values (levels included) raw,
// compressed to data, with its header.
func finishPage(t *layout.Table, info *common.Tag, raw, data []byte, n int, enc parquet.Encoding, pageSize int32, codec parquet.CompressionCodec, minVal, maxVal any, nulls int64) *layout.Page {
	p := layout.NewDataPage()
	p.PageSize = pageSize
	p.Schema, p.Path, p.Info, p.CompressType = t.Schema, t.Path, info, codec
	if !info.OmitStats {
		p.MinVal, p.MaxVal, p.NullCount = minVal, maxVal, &nulls
	}
	h := parquet.NewPageHeader()
	h.Type = parquet.PageType_DATA_PAGE
	h.CompressedPageSize = int32(len(data))
	h.UncompressedPageSize = int32(len(raw))
	h.DataPageHeader = parquet.NewDataPageHeader()
	h.DataPageHeader.NumValues = int32(n)
	h.DataPageHeader.DefinitionLevelEncoding = parquet.Encoding_RLE
	h.DataPageHeader.RepetitionLevelEncoding = parquet.Encoding_RLE
	h.DataPageHeader.Encoding = enc
	h.DataPageHeader.Statistics = parquet.NewStatistics()
	if p.MaxVal != nil {
		h.DataPageHeader.Statistics.Max = statBytes(p.MaxVal, *t.Schema.Type)
		h.DataPageHeader.Statistics.MaxValue = h.DataPageHeader.Statistics.Max
		h.DataPageHeader.Statistics.Min = statBytes(p.MinVal, *t.Schema.Type)
		h.DataPageHeader.Statistics.MinValue = h.DataPageHeader.Statistics.Min
	}
	h.DataPageHeader.Statistics.NullCount = p.NullCount
	p.Header = h
	ts := thrift.NewTSerializer()
	ts.Protocol = thrift.NewTCompactProtocolFactory().GetProtocol(ts.Transport)
	hb, err := ts.Write(context.Background(), h)
	if err != nil {
		// Serializing a struct into memory cannot fail.
		panic(err)
	}
	p.RawData = append(hb, data...)
	return p
}

// dictPages encodes t's values as indices into dict (adding new values to
// it) in data pages of about pageSize bytes of values.
func dictPages(dict *layout.DictRecType, t *layout.Table, pageSize int32, codec parquet.CompressionCodec) ([]*layout.Page, int64) {
	var pages []*layout.Page
	var total int64
	funcs := common.FindFuncTable(t.Schema.Type, t.Schema.ConvertedType, t.Schema.LogicalType)
	for i := 0; i < len(t.Values); {
		j := i
		var size int32
		var minVal, maxVal any
		var nulls int64
		var idx []int32
		for j < len(t.Values) && size < pageSize {
			if t.DefinitionLevels[j] == t.MaxDefinitionLevel {
				v := t.Values[j]
				var n int32
				minVal, maxVal, n = minMaxSize(funcs, minVal, maxVal, v)
				size += n
				k, ok := dict.DictMap[dictKey(v)]
				if !ok {
					dict.DictSlice = append(dict.DictSlice, v)
					k = int32(len(dict.DictSlice) - 1)
					dict.DictMap[dictKey(v)] = k
				}
				idx = append(idx, k)
			} else if t.Values[j] == nil {
				nulls++
			}
			j++
		}
		// Indices only grow, so the dictionary's size now bounds this
		// page's. The narrowest width is smallest before compression, but a
		// byte-aligned one lets the codec find repeated sequences of values;
		// the page keeps whichever compresses smaller.
		narrow := max(1, bits.Len32(uint32(len(dict.DictSlice)-1)))
		var raw, data []byte
		for _, width := range []int{narrow, (narrow + 7) / 8 * 8} {
			var r []byte
			if t.MaxRepetitionLevel > 0 {
				r = appendLevels(r, t.RepetitionLevels[i:j], t.MaxRepetitionLevel)
			}
			if t.MaxDefinitionLevel > 0 {
				r = appendLevels(r, t.DefinitionLevels[i:j], t.MaxDefinitionLevel)
			}
			r = append(r, byte(width))
			r = appendHybrid(r, idx, width)
			if d := compressPage(r, codec); data == nil || len(d) < len(data) {
				raw, data = r, d
			}
			if narrow%8 == 0 {
				break
			}
		}

		p := finishPage(t, t.Info, raw, data, j-i, parquet.Encoding_RLE_DICTIONARY, pageSize, codec, minVal, maxVal, nulls)
		total += int64(len(p.RawData))
		pages = append(pages, p)
		i = j
	}
	return pages, total
}

// minMaxSize is funcs.MinMaxSize leaving NaN out of the statistics, as
// the format asks (a NaN bound would make a reader skip pages whose other
// values match a filter), and with zero bounds as -0 (min) and +0 (max),
// so that a reader comparing either zero with them keeps the page.
func minMaxSize(funcs common.FuncTable, minVal, maxVal, v any) (any, any, int32) {
	switch x := v.(type) {
	case float32:
		return floatBounds(funcs, minVal, maxVal, x)
	case float64:
		return floatBounds(funcs, minVal, maxVal, x)
	}
	return funcs.MinMaxSize(minVal, maxVal, v)
}

func floatBounds[F float32 | float64](funcs common.FuncTable, minVal, maxVal any, v F) (any, any, int32) {
	if v != v { // NaN
		_, _, n := funcs.MinMaxSize(nil, nil, v)
		return minVal, maxVal, n
	}
	lo, hi, n := funcs.MinMaxSize(minVal, maxVal, v)
	if lo.(F) == 0 {
		lo = F(math.Copysign(0, -1))
	}
	if hi.(F) == 0 {
		hi = F(0)
	}
	return lo, hi, n
}

// dictKey is v as a dictionary's map key: a float by its bits, since as
// Go map keys -0 equals 0 (it would read back as 0) and NaN equals nothing.
func dictKey(v any) any {
	switch x := v.(type) {
	case float32:
		return math.Float32bits(x)
	case float64:
		return math.Float64bits(x)
	}
	return v
}

// statBytes is a statistic's value as Parquet stores it: plain encoding,
// without the length prefix of a byte array.
func statBytes(v any, typ parquet.Type) []byte {
	b := encoding.WritePlain([]any{v}, typ)
	if typ == parquet.Type_BYTE_ARRAY {
		b = b[4:]
	}
	return b
}

// appendLevels appends repetition or definition levels as a data page v1
// carries them: a 4-byte length, then the RLE/bit-packed hybrid.
func appendLevels(b []byte, levels []int32, maxLevel int32) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = appendHybrid(b, levels, bits.Len32(uint32(maxLevel)))
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// minRun is the shortest repeat written as an RLE run rather than bit-packed.
const minRun = 8

// appendHybrid appends vs in Parquet's RLE/bit-packed hybrid encoding at
// width bits: runs of at least minRun equal values as RLE runs, the rest
// bit-packed in groups of eight (the last group padded with zeros, which
// readers ignore past the page's value count).
func appendHybrid(b []byte, vs []int32, width int) []byte {
	lit := 0 // start of the pending literal values
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j] == vs[i] {
			j++
		}
		if j-i >= minRun {
			// A run may only start where the literals fill whole groups:
			// its head completes the last group.
			if r := (i - lit) % 8; r != 0 {
				i += 8 - r
				continue
			}
			b = appendPacked(b, vs[lit:i], width)
			b = binary.AppendUvarint(b, uint64(j-i)<<1)
			for k := 0; k < (width+7)/8; k++ {
				b = append(b, byte(uint32(vs[i])>>(8*k)))
			}
			i, lit = j, j
			continue
		}
		i = j
	}
	return appendPacked(b, vs[lit:], width)
}

// appendPacked appends one bit-packed run of vs (none if vs is empty).
func appendPacked(b []byte, vs []int32, width int) []byte {
	if len(vs) == 0 {
		return b
	}
	groups := (len(vs) + 7) / 8
	b = binary.AppendUvarint(b, uint64(groups)<<1|1)
	var acc uint64
	n := 0
	for k := 0; k < groups*8; k++ {
		var v uint32
		if k < len(vs) {
			v = uint32(vs[k])
		}
		acc |= uint64(v) << n
		n += width
		for n >= 8 {
			b = append(b, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	// groups*8*width is a whole number of bytes: nothing is left in acc.
	return b
}
