package service

import "errors"

var (
	// ErrInvalidConfig marks a Config that Validate rejects.
	ErrInvalidConfig = errors.New("audit service: invalid config")
	// ErrNotFound marks a topic or window the store does not hold.
	ErrNotFound = errors.New("audit service: not found")
)
