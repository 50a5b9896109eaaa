package pipeline

import "errors"

// Sentinel errors.
var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = errors.New("pipeline: invalid config")
	// ErrNotExactlyOnce marks loaded files that miss a produced record or
	// hold one twice.
	ErrNotExactlyOnce = errors.New("pipeline: loaded records are not exactly the produced ones")
	// ErrAuditIncomplete marks a closed audit window where a tier counted
	// fewer records than the producers.
	ErrAuditIncomplete = errors.New("pipeline: audit incomplete")
	// ErrTables marks a Hive Metastore (Config.HiveMetastoreURIs) that is
	// invalid or cannot be reached at start.
	ErrTables = errors.New("pipeline: hive metastore")
)
