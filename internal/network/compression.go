package network

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Compression is the codec of a compression.type value: "none" or ""
// (no compression), "gzip", "snappy", "lz4" or "zstd", in any case. ok is
// false for any other name; the caller's error names its own key.
func Compression(name string) (codec kgo.CompressionCodec, ok bool) {
	switch strings.ToLower(name) {
	case "", "none":
		return kgo.NoCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	}
	return kgo.CompressionCodec{}, false
}
