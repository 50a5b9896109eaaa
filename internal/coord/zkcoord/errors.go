package zkcoord

import "errors"

// ErrBadConnect: the connect string is not "host:port[,host:port...][/chroot]".
var ErrBadConnect = errors.New("zkcoord: invalid connect string")
