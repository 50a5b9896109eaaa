package security

import "errors"

var (
	// ErrUnknownProtocol is a security protocol Kafka does not define.
	ErrUnknownProtocol = errors.New("unknown security protocol")
	// ErrBadTLS marks TLS settings that cannot be used: a file that does
	// not parse, a missing key, a wrong password, an unknown protocol
	// version or cipher suite.
	ErrBadTLS = errors.New("bad TLS settings")
)
