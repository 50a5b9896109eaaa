package coord

import "errors"

var (
	// ErrNoNode: the node (or, for Create, its parent) does not exist.
	ErrNoNode = errors.New("coord: node does not exist")
	// ErrNodeExists: Create found the node already there.
	ErrNodeExists = errors.New("coord: node already exists")
	// ErrBadVersion: a compare-and-set saw another version.
	ErrBadVersion = errors.New("coord: version mismatch")
	// ErrNotEmpty: Delete of a node that has children.
	ErrNotEmpty = errors.New("coord: node has children")
	// ErrNoChildrenForEphemerals: Create under an ephemeral node.
	ErrNoChildrenForEphemerals = errors.New("coord: ephemeral nodes cannot have children")
	// ErrSessionExpired: the session is gone; open a new one.
	ErrSessionExpired = errors.New("coord: session expired")
	// ErrClosed: the session was closed by its owner.
	ErrClosed = errors.New("coord: session closed")
	// ErrUnavailable: the service cannot be reached (connection timeout).
	ErrUnavailable = errors.New("coord: service unavailable")
	// ErrBadPath: the path is not absolute or has an empty component.
	ErrBadPath = errors.New("coord: invalid path")
)
