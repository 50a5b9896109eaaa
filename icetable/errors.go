package icetable

import "errors"

var (
	// ErrInvalidConfig is a bad or missing iceberg.* setting; the message
	// names the key.
	ErrInvalidConfig = errors.New("icetable: invalid configuration")
	// ErrSchema is an Avro schema with no Iceberg mapping (a union of only
	// null, a decimal wider than 38 digits, a field named like a metadata
	// column).
	ErrSchema = errors.New("icetable: unsupported schema")
	// ErrTypeChange is a schema version that changes the type of a column
	// the table has; the message names topic, field and both types. The
	// table stays as it was.
	ErrTypeChange = errors.New("icetable: column type changed")
	// ErrValue is a record value that does not match the table's schema.
	ErrValue = errors.New("icetable: value does not match schema")
	// ErrCommit is a commit that failed after every retry. The batch was
	// not in the table when Append last looked, but an attempt still in
	// flight in the catalog could land: read Committed again (as after a
	// restart) before appending those records again.
	ErrCommit = errors.New("icetable: commit failed")
	// ErrSummary is a snapshot summary whose tributary.* values do not
	// parse: the table was written by something else under our keys.
	ErrSummary = errors.New("icetable: bad tributary snapshot summary")
)
