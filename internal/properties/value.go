package properties

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The value parsers below are the getters' rules, exported for tables
// that map a key to a setter of their own (the broker's). They take the
// value already trimmed and return a reason, without the key: the caller
// names it (Props.Reject does).

// ParseInt parses a base-10 integer of bits bits that must be >= min.
func ParseInt(v string, bits int, min int64) (int64, error) {
	if v == "" {
		return 0, errors.New("empty, want an integer")
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("out of range for a %d-bit integer", bits)
		}
		return 0, errors.New("not an integer")
	}
	if n < min {
		return 0, fmt.Errorf("must be >= %d", min)
	}
	return n, nil
}

// ParseBool parses Kafka's booleans: true or false, in any case.
func ParseBool(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, errors.New("want true or false")
}

// ParseDuration parses an integer count of unit that must be >= min (in
// units). Counts too large for a time.Duration are clamped, so that Kafka's
// "never" (Long.MAX_VALUE) stays a very long time instead of overflowing.
func ParseDuration(v string, unit time.Duration, min int64) (time.Duration, error) {
	n, err := ParseInt(v, 64, min)
	if err != nil {
		return 0, err
	}
	limit := int64(1<<62) / int64(unit)
	switch {
	case n > limit:
		n = limit
	case n < -limit:
		n = -limit
	}
	return time.Duration(n) * unit, nil
}

// SplitList splits a comma-separated list, trimming every item and
// dropping empty ones.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
