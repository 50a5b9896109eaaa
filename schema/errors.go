package schema

import "errors"

var (
	// ErrShortFrame: the input is shorter than the 5-byte header.
	ErrShortFrame = errors.New("schema: frame shorter than the 5-byte header")
	// ErrBadMagic: byte 0 is not MagicByte, so the input is not a
	// schema-ID framed payload (or a future, unknown framing).
	ErrBadMagic = errors.New("schema: wrong magic byte")
	// ErrBadID: a schema id outside what the registry can assign (0 and
	// above 2^31-1, the Java registry's int range).
	ErrBadID = errors.New("schema: invalid schema id")
)
