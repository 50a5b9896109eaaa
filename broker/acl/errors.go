package acl

import "errors"

var (
	// ErrUnknownName is a resource type, pattern type, operation or
	// permission name that Kafka does not define.
	ErrUnknownName = errors.New("acl: unknown name")
	// ErrInvalidBinding is a binding or filter CreateAcls, DescribeAcls or
	// DeleteAcls refuses (INVALID_REQUEST).
	ErrInvalidBinding = errors.New("acl: invalid ACL")
	// ErrMalformedNode is an ACL node or change notification that is not
	// Kafka's JSON.
	ErrMalformedNode = errors.New("acl: malformed ACL node")
	// ErrConflict is a pattern's node that kept changing under our
	// compare-and-set.
	ErrConflict = errors.New("acl: concurrent ACL updates kept conflicting")
	// ErrClosed is a Store used after Close.
	ErrClosed = errors.New("acl: store closed")
)
