package serde

import (
	"errors"

	"github.com/tributary/tributary/schema"
)

var (
	// ErrBadMagic: byte 0 is not the framing's magic byte (the same
	// sentinel as schema.ErrBadMagic).
	ErrBadMagic = schema.ErrBadMagic
	// ErrUnknownSchema: the registry has no schema with the frame's id.
	ErrUnknownSchema = errors.New("serde: unknown schema id")
	// ErrMalformedPayload: the bytes are too short for a frame, or are not
	// one datum of the writer schema (truncated, garbage, trailing bytes).
	ErrMalformedPayload = errors.New("serde: malformed payload")
	// ErrEncode: the value does not fit the schema.
	ErrEncode = errors.New("serde: value does not match schema")
	// ErrInvalidSchema: a schema given to Encode or as reader does not parse.
	ErrInvalidSchema = errors.New("serde: invalid schema")
	// ErrIncompatible: the reader schema cannot read the writer's data, or
	// the registry refused a schema as incompatible.
	ErrIncompatible = errors.New("serde: incompatible schema")
	// ErrAccessDenied: the registry refused the credentials (HTTP 401) or
	// the user's role (403).
	ErrAccessDenied = errors.New("serde: schema registry access denied")
	// ErrRegistry: the registry failed or could not be reached.
	ErrRegistry = errors.New("serde: schema registry error")
)
