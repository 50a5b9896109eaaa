package memcoord

import "errors"

// ErrUnknownSession: Server.Expire was given an id that is not a live session.
var ErrUnknownSession = errors.New("memcoord: no such live session")
