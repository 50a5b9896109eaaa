package schema

import (
	"encoding/binary"
	"fmt"
	"math"
)

const (
	// MagicByte opens every framed payload. Frozen.
	MagicByte byte = 0x00
	// HeaderSize is the magic byte plus the 4-byte schema id. Frozen.
	HeaderSize = 5
)

// ID is a schema id as the registry assigns it: global across subjects,
// positive, within the Java int range.
type ID uint32

// Valid reports whether the registry could have assigned id.
func (id ID) Valid() bool { return id > 0 && id <= math.MaxInt32 }

// AppendHeader appends the 5-byte header for id to dst.
func AppendHeader(dst []byte, id ID) []byte {
	dst = append(dst, MagicByte)
	return binary.BigEndian.AppendUint32(dst, uint32(id))
}

// Frame returns header(id) followed by payload in a new slice.
func Frame(id ID, payload []byte) ([]byte, error) {
	if !id.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrBadID, id)
	}
	out := make([]byte, 0, HeaderSize+len(payload))
	out = AppendHeader(out, id)
	return append(out, payload...), nil
}

// Parse splits a framed payload into its schema id and the Avro bytes. The
// returned payload aliases b.
func Parse(b []byte) (ID, []byte, error) {
	if len(b) < HeaderSize {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrShortFrame, len(b))
	}
	if b[0] != MagicByte {
		return 0, nil, fmt.Errorf("%w: 0x%02x", ErrBadMagic, b[0])
	}
	id := ID(binary.BigEndian.Uint32(b[1:HeaderSize]))
	if !id.Valid() {
		return 0, nil, fmt.Errorf("%w: %d", ErrBadID, id)
	}
	return id, b[HeaderSize:], nil
}
