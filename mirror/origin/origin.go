package origin

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Header is the name of the header every mirrored record carries. Frozen.
const Header = "tributary.origin"

// ErrMalformed: a header value is not "<source>/<partition>/<offset>".
var ErrMalformed = errors.New("origin: malformed origin header")

// Parse splits a header value. The source name may contain '/' only if
// the header was not written by the mirror (it validates names);
// partition and offset are the last two fields.
func Parse(value []byte) (source string, partition int32, offset int64, err error) {
	j := bytes.LastIndexByte(value, '/')
	if j <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrMalformed, value)
	}
	i := bytes.LastIndexByte(value[:j], '/')
	if i <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrMalformed, value)
	}
	p, err := strconv.ParseInt(string(value[i+1:j]), 10, 32)
	if err != nil || p < 0 {
		return "", 0, 0, fmt.Errorf("%w: partition in %q", ErrMalformed, value)
	}
	o, err := strconv.ParseInt(string(value[j+1:]), 10, 64)
	if err != nil || o < 0 {
		return "", 0, 0, fmt.Errorf("%w: offset in %q", ErrMalformed, value)
	}
	return string(value[:i]), int32(p), o, nil
}

// Append appends the header value of one record to dst.
func Append(dst []byte, source string, partition int32, offset int64) []byte {
	dst = append(dst, source...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(partition), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, offset, 10)
}
