package mirror

import (
	"bytes"
	"fmt"
	"strconv"
)

// OriginHeader is the header every mirrored record carries: where it came
// from, "<source>/<partition>/<offset>" (e.g. "dc1/3/1200"), the source
// topic being the record's own topic before any rename. A consumer keeps the
// largest offset seen per (source, topic, partition) and drops a record at or
// below it: that turns the mirror's at-least-once into exactly-once. Frozen
// format.
const OriginHeader = "tributary.origin"

// ParseOrigin splits an origin header value. The source name may contain '/'
// only if the header was not written by this mirror (names are validated);
// partition and offset are the last two fields.
func ParseOrigin(value []byte) (source string, partition int32, offset int64, err error) {
	j := bytes.LastIndexByte(value, '/')
	if j <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrBadOrigin, value)
	}
	i := bytes.LastIndexByte(value[:j], '/')
	if i <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", ErrBadOrigin, value)
	}
	p, err := strconv.ParseInt(string(value[i+1:j]), 10, 32)
	if err != nil || p < 0 {
		return "", 0, 0, fmt.Errorf("%w: partition in %q", ErrBadOrigin, value)
	}
	o, err := strconv.ParseInt(string(value[j+1:]), 10, 64)
	if err != nil || o < 0 {
		return "", 0, 0, fmt.Errorf("%w: offset in %q", ErrBadOrigin, value)
	}
	return string(value[:i]), int32(p), o, nil
}

// appendOrigin appends the origin value of one record to dst.
func appendOrigin(dst []byte, source string, partition int32, offset int64) []byte {
	dst = append(dst, source...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(partition), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, offset, 10)
}
