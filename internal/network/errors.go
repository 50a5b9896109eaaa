package network

import "errors"

// ErrBadAuth marks authentication settings that cannot be used: an
// unknown method, a users file that cannot be read, a password format not
// supported, an unknown permission.
var ErrBadAuth = errors.New("bad authentication settings")
