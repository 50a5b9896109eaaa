package compact

import "errors"

var (
	// ErrInvalidConfig: a Config field is invalid; the message names it.
	ErrInvalidConfig = errors.New("compact: invalid configuration")
	// ErrUnsupportedSchema: an Avro schema has no Parquet mapping here (e.g. a recursive record).
	ErrUnsupportedSchema = errors.New("compact: unsupported Avro schema")
)
