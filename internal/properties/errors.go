package properties

import "errors"

// ErrSyntax marks a line Read cannot parse (a malformed \uXXXX escape).
var ErrSyntax = errors.New("properties: syntax error")

// ErrValue marks a value a getter refused; the *Error wrapping it names the
// key and the value.
var ErrValue = errors.New("invalid value")
