package icereader

import "errors"

var (
	// ErrSpark marks a Spark SQL statement that failed; the error's text
	// holds Spark's message.
	ErrSpark = errors.New("icereader: spark sql failed")
	// ErrBadOutput marks a reader script's output that does not decode: a
	// bug of the scripts, or a type they do not know.
	ErrBadOutput = errors.New("icereader: bad reader output")
)
