package network

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestCompression(t *testing.T) {
	cases := map[string]kgo.CompressionCodec{
		"":       kgo.NoCompression(),
		"none":   kgo.NoCompression(),
		"gzip":   kgo.GzipCompression(),
		"GZIP":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"Zstd":   kgo.ZstdCompression(),
	}
	for name, want := range cases {
		got, ok := Compression(name)
		if !ok || got != want {
			t.Errorf("Compression(%q) = %v, %v; want %v, true", name, got, ok, want)
		}
	}
	for _, name := range []string{"brotli", "snappy ", "gzip9"} {
		if _, ok := Compression(name); ok {
			t.Errorf("Compression(%q) accepted", name)
		}
	}
}
