package compact

import "errors"

var (
	// ErrInvalidConfig: a Config field is invalid; the message names it.
	ErrInvalidConfig = errors.New("compact: invalid configuration")
	// ErrUnsupportedSchema: an Avro schema has no Parquet mapping here (e.g. a recursive record).
	ErrUnsupportedSchema = errors.New("compact: unsupported Avro schema")
	// ErrCatalogBlocked: the catalog refuses a topic until someone acts (a
	// schema change its table cannot take); a Catalog's error wraps it so
	// that the run's summary lists the topic in TablesBlocked.
	ErrCatalogBlocked = errors.New("compact: catalog registration of the topic blocked")
)
