package security

import "errors"

var (
	// ErrUnknownProtocol is a security protocol Kafka does not define.
	ErrUnknownProtocol = errors.New("unknown security protocol")
	// ErrBadTLS marks TLS settings that cannot be used: a file that does
	// not parse, a missing key, a wrong password, an unknown protocol
	// version or cipher suite.
	ErrBadTLS = errors.New("bad TLS settings")
	// ErrUnknownMechanism is a SASL mechanism Tributary does not speak.
	ErrUnknownMechanism = errors.New("unknown SASL mechanism")
	// ErrBadJAAS marks a sasl.jaas.config that does not parse or names a
	// login module or options a client cannot use.
	ErrBadJAAS = errors.New("bad JAAS configuration")
	// ErrSecret marks a ${file:...} or ${env:...} reference that cannot be
	// resolved.
	ErrSecret = errors.New("unresolvable secret")
)
