package partition

import "errors"

// ErrOpen marks a topic whose partition this broker leads but cannot open
// (out of file descriptors, a disk error). The topic exists; the broker
// retries with back-off, so it comes online once the cause goes.
var ErrOpen = errors.New("broker: partition cannot be opened")
