package store

import "errors"

var (
	// ErrBadName marks a topic, tier, cluster or instance name the store
	// cannot key (it contains a NUL byte, or the topic is empty).
	ErrBadName = errors.New("store: bad name")
	// ErrVersion marks a store file written by an unknown layout version.
	ErrVersion = errors.New("store: unknown layout version")
)
