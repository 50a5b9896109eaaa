package hours

import "errors"

var (
	// ErrNotLoaderFile: a name is not a loader file name (LoaderFile).
	ErrNotLoaderFile = errors.New("hours: not a loader file name")
	// ErrNotCompactedFile: a name is not a compaction output name (CompactedFile).
	ErrNotCompactedFile = errors.New("hours: not a compacted file name")
	// ErrCorruptManifest: an hour's _compacted marker does not parse, has
	// another format version or names an output that is not there.
	ErrCorruptManifest = errors.New("hours: corrupt compaction manifest")
)

// ErrCorruptLayout: a topic's _partitioning marker or an hour's _SUCCESS
// marker does not parse.
var ErrCorruptLayout = errors.New("hours: corrupt layout marker")

// ErrStoredColumn: a value schema cannot take the stored Kafka columns
// (not a record, or a field of a column's name).
var ErrStoredColumn = errors.New("hours: value schema conflicts with the stored Kafka columns")

// ErrCatalogBlocked: the catalog refuses a topic until someone acts (a
// schema change its table cannot take); a Catalog's error wraps it so
// that compaction's summary lists the topic in TablesBlocked.
var ErrCatalogBlocked = errors.New("hours: catalog registration of the topic blocked")
