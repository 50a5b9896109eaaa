package filesys

import "errors"

var (
	// ErrBadURI: the URI given to Open is not hdfs://, file:// or a path.
	ErrBadURI = errors.New("filesys: bad file system URI")
	// ErrHDFSConfig: HDFSOptions are invalid or unsupported (the key is named).
	ErrHDFSConfig = errors.New("filesys: bad HDFS configuration")
	// ErrKerberos: the Kerberos login failed (wrong keytab or principal,
	// unreachable KDC, bad krb5.conf).
	ErrKerberos = errors.New("filesys: kerberos login failed")
)
