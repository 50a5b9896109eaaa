package docstest

import "errors"

var (
	// ErrMarker is a ```sh block without a valid docs-test marker above it.
	ErrMarker = errors.New("docs-test marker")
	// ErrPropertiesComment is a properties line with a comment after its
	// value: in a .properties file # starts a comment only at the start of a
	// line, so the comment would become part of the value.
	ErrPropertiesComment = errors.New("comment after a properties value")
	// ErrBlockFailed is a run block that exited non-zero or timed out.
	ErrBlockFailed = errors.New("example failed")
	// ErrPackageTable is a package table that lists a package that does not
	// exist or misses one that does.
	ErrPackageTable = errors.New("stale package table")
)
