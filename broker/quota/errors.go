package quota

import "errors"

var (
	// ErrUnknownKey is a quota key Kafka does not know (INVALID_REQUEST).
	ErrUnknownKey = errors.New("quota: unknown quota key")
	// ErrBadValue is a negative, non-finite or, for a byte rate, fractional
	// value (INVALID_REQUEST).
	ErrBadValue = errors.New("quota: bad quota value")
	// ErrBadEntity is an entity without a user or client id part, or with
	// a type named twice (INVALID_REQUEST).
	ErrBadEntity = errors.New("quota: bad quota entity")
	// ErrClosed is returned by a closed Store.
	ErrClosed = errors.New("quota: store closed")
)
