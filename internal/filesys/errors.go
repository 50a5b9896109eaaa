package filesys

import "errors"

var (
	// ErrBadURI: the URI given to Open is not hdfs://, file:// or a path.
	ErrBadURI = errors.New("filesys: bad file system URI")
)
