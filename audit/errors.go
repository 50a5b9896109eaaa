package audit

import "errors"

var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = errors.New("audit: invalid config")
	// ErrBadEvent marks bytes that are not a valid audit event.
	ErrBadEvent = errors.New("audit: bad event")
	// ErrUnknownVersion marks an event of a format version this package does not read.
	ErrUnknownVersion = errors.New("audit: unknown event version")
	// ErrClosed is returned by Flush after Close.
	ErrClosed = errors.New("audit: counter closed")
)
