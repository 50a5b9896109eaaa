package tables

import "errors"

var (
	// ErrBadConfig: a hive.* key or a Config field is invalid; the message names it.
	ErrBadConfig = errors.New("tables: invalid configuration")
	// ErrBadPartition: a wanted Partition is malformed (unaligned start, unknown format, ...).
	ErrBadPartition = errors.New("tables: invalid partition")
	// ErrUnsupportedSchema: an Avro schema has no Hive column mapping (a recursive record, references, ...).
	ErrUnsupportedSchema = errors.New("tables: unsupported Avro schema")
	// ErrIncompatible: a schema changes the type of a table column; registration of that topic stops.
	ErrIncompatible = errors.New("tables: schema change the table cannot take")
	// ErrUnavailable: no metastore of hive.metastore.uris could be reached or a call on it failed in transport.
	ErrUnavailable = errors.New("tables: metastore unavailable")
)
