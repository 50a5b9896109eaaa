package avro

import "errors"

var (
	// ErrInvalidSchema: the text is not a valid Avro schema.
	ErrInvalidSchema = errors.New("avro: invalid schema")
	// ErrIncompatible: the reader schema cannot read data of the writer schema.
	ErrIncompatible = errors.New("avro: schemas are incompatible")
	// ErrBadValue: a value does not have the native shape its schema implies
	// (Resolve was given something goavro would not have produced).
	ErrBadValue = errors.New("avro: value does not match schema")
)
