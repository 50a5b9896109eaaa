package memcoord

import "errors"

// ErrUnknownSession: Server.Expire was given an id that is not a live session.
var ErrUnknownSession = errors.New("memcoord: no such live session")

// ErrLocked: Open was given a directory another server has open.
var ErrLocked = errors.New("memcoord: the coordination directory is in use by another process")

// ErrCorrupt: Open found a snapshot or log record it cannot read (a torn
// last record is not corruption: it is dropped).
var ErrCorrupt = errors.New("memcoord: corrupt coordination state")
