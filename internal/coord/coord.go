package coord

import (
	"context"
	"time"
)

// Stat is the metadata of a node, as ZooKeeper reports it.
type Stat struct {
	// Version counts the writes to the node's data; compare-and-set uses it.
	Version int32
	// CVersion counts changes to the node's children.
	CVersion int32
	// EphemeralOwner is the session id owning an ephemeral node, 0 otherwise.
	EphemeralOwner int64
	// NumChildren is the number of children.
	NumChildren int32
	// Created and Modified are the node's creation and last-write times.
	Created, Modified time.Time
}

// CreateMode says what kind of node Create makes.
type CreateMode int

const (
	// Persistent nodes live until deleted.
	Persistent CreateMode = iota
	// Ephemeral nodes are deleted when the creating session ends.
	Ephemeral
	// PersistentSequential appends a 10-digit, zero-padded counter to the name.
	PersistentSequential
	// EphemeralSequential is Ephemeral with the sequential suffix.
	EphemeralSequential
)

// AnyVersion matches any node version in Set and Delete.
const AnyVersion int32 = -1

// EventType says what a watch observed.
type EventType int

const (
	EventNodeCreated EventType = iota + 1
	EventNodeDeleted
	EventNodeDataChanged
	EventNodeChildrenChanged
	// EventSessionLost fires a watch whose session expired or was closed;
	// the watcher must re-read state on a new session.
	EventSessionLost
)

// Event is delivered once on a watch channel, which is then closed.
type Event struct {
	Type EventType
	Path string
}

// SessionState is reported on Session.States.
type SessionState int

const (
	// StateConnected: the session is established (or re-established
	// within its timeout, keeping ephemeral nodes and watches).
	StateConnected SessionState = iota + 1
	// StateDisconnected: the connection dropped; the session may still
	// come back before its timeout.
	StateDisconnected
	// StateExpired: the session is gone, with its ephemeral nodes. The
	// owner must open a new Session and register again.
	StateExpired
)

// Op is one operation of an atomic Multi.
type Op struct {
	Kind    OpKind
	Path    string
	Data    []byte
	Mode    CreateMode // for OpCreate
	Version int32      // for OpSet, OpDelete, OpCheck
}

// OpKind selects the operation of an Op.
type OpKind int

const (
	OpCreate OpKind = iota + 1
	OpSet
	OpDelete
	OpCheck // fails the Multi unless the node's version equals Version
)

// SessionFactory opens a new session. Every component that outlives a
// session (a broker, a group member, a cache following the tree) holds one
// and calls it again after each session ends.
type SessionFactory func(ctx context.Context) (Session, error)

// Session is one client session against the coordination service. All
// paths are absolute ("/brokers/ids/1") and relative to the session's chroot.
//
// Watches are one-shot: the returned channel receives exactly one Event and
// is then closed. Every method is safe for concurrent use.
type Session interface {
	// ID is the session id (the EphemeralOwner of nodes it creates).
	ID() int64
	// Create makes a node and returns its actual path (with the sequential
	// suffix, if any). The parent must exist (ErrNoNode otherwise).
	Create(ctx context.Context, path string, data []byte, mode CreateMode) (string, error)
	// CreateAll is Create that first makes missing parents as empty
	// persistent nodes (like mkdir -p). Existing parents are fine.
	CreateAll(ctx context.Context, path string, data []byte, mode CreateMode) (string, error)
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	GetW(ctx context.Context, path string) ([]byte, Stat, <-chan Event, error)
	// Exists reports whether the node exists; the watch fires on create,
	// delete or data change.
	Exists(ctx context.Context, path string) (bool, Stat, error)
	ExistsW(ctx context.Context, path string) (bool, Stat, <-chan Event, error)
	// Set writes data if version matches (or is AnyVersion): ErrBadVersion otherwise.
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	// Delete removes a node without children if version matches.
	Delete(ctx context.Context, path string, version int32) error
	// Children returns the names (not paths) of the children, sorted.
	Children(ctx context.Context, path string) ([]string, Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan Event, error)
	// Multi applies all ops atomically or none; the error of the first failing op
	// is returned (wrapped, classify with errors.Is).
	Multi(ctx context.Context, ops ...Op) error
	// States delivers session state changes. It is buffered; a slow reader
	// loses intermediate Disconnected/Connected pairs but never StateExpired.
	States() <-chan SessionState
	// Close ends the session, deleting its ephemeral nodes.
	Close() error
}
