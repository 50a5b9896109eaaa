package tables

import (
	"errors"

	"github.com/tributary/tributary/hours"
)

var (
	// ErrInvalidConfig: a hive.* key or a Config field is invalid; the message names it.
	ErrInvalidConfig = errors.New("tables: invalid configuration")
	// ErrBadPartition: a wanted Partition is malformed (unaligned start, unknown format, ...).
	ErrBadPartition = errors.New("tables: invalid partition")
	// ErrUnsupportedSchema: an Avro schema has no Hive column mapping (a recursive record, references, ...).
	ErrUnsupportedSchema = errors.New("tables: unsupported Avro schema")
	// ErrIncompatible: a schema changes the type of a table column; registration of that topic stops.
	// It wraps hours.ErrCatalogBlocked, so compaction's summary lists the topic as blocked.
	ErrIncompatible error = incompatible{}
	// ErrUnavailable: no metastore of hive.metastore.uris could be reached or a call on it failed in transport.
	ErrUnavailable = errors.New("tables: metastore unavailable")
	// ErrNoRegistry: hive.integration=true without schema.registry.url (Open).
	ErrNoRegistry = errors.New("schema.registry.url is required with hive.integration=true (the table's columns come from the topic's latest value schema)")
)

type incompatible struct{}

func (incompatible) Error() string { return "tables: schema change the table cannot take" }
func (incompatible) Unwrap() error { return hours.ErrCatalogBlocked }
