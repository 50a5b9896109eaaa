package loader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// OriginHeader is the header the mirror puts on every record it copies:
// "<source>/<partition>/<offset>" of the record in its source cluster.
const OriginHeader = "tributary.origin"

// errBadOrigin: an origin header that does not parse.
var errBadOrigin = errors.New("loader: malformed origin header")

// ParseOrigin parses an origin header value. The source name may itself
// contain slashes: partition and offset are the last two fields.
func ParseOrigin(v []byte) (source string, partition int32, offset int64, err error) {
	s := string(v)
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", errBadOrigin, s)
	}
	j := strings.LastIndexByte(s[:i], '/')
	if j <= 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", errBadOrigin, s)
	}
	p, err1 := strconv.ParseInt(s[j+1:i], 10, 32)
	o, err2 := strconv.ParseInt(s[i+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 {
		return "", 0, 0, fmt.Errorf("%w: %q", errBadOrigin, s)
	}
	return s[:j], int32(p), o, nil
}
