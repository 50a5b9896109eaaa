package mirror

import "errors"

var (
	// ErrInvalidConfig: a Config failed Validate; the message names the property.
	ErrInvalidConfig = errors.New("mirror: invalid configuration")
	// ErrPartitionStopped: the target refused a record for good (e.g. larger
	// than its max.message.bytes); the partition is stopped at that record
	// and its offset is never committed past it.
	ErrPartitionStopped = errors.New("mirror: partition stopped")
)
