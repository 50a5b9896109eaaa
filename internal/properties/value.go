package properties

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The value parsers below are the getters' rules, exported for tables
// that map a key to a setter of their own (the broker's). They take the
// value already trimmed and return a reason, without the key: the caller
// names it (Props.Reject does).

// commentRule is why a value ending in " # ..." is refused or warned
// about.
const commentRule = "'#' and '!' start a comment only at the start of a line (java.util.Properties), so it is part of the value; put the comment on a line of its own"

// trailingComment matches whitespace then '#' or '!': what a comment after
// a value looks like.
var trailingComment = regexp.MustCompile(`[ \t\f][#!]`)

// TrailingComment reports whether v looks like it ends in a comment
// written after the value ("views|clicks   # a regex").
func TrailingComment(v string) bool { return trailingComment.MatchString(v) }

// ErrTrailingComment is the reason a typed getter gives for a value that
// looks like it ends in a comment.
var ErrTrailingComment = errors.New("ends in what looks like a comment: " + commentRule)

// not is the reason for a value that is not of the wanted type: the
// trailing-comment explanation when it looks like one.
func not(v, want string) error {
	if TrailingComment(v) {
		return ErrTrailingComment
	}
	return errors.New(want)
}

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
		return 0, not(v, "not an integer")
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
	return false, not(v, "want true or false")
}

// ParseURI parses an absolute or relative URI that names a location: one
// with a fragment ("#...") or with whitespace cannot be meant (a comment
// after the value, most likely: "file:///out   # the output"), so both
// are refused rather than written into a directory named "out   ".
func ParseURI(v string) (*url.URL, error) {
	if TrailingComment(v) {
		return nil, ErrTrailingComment
	}
	if strings.ContainsFunc(v, unicode.IsSpace) {
		return nil, errors.New("a URI cannot contain spaces (write %20)")
	}
	u, err := url.Parse(v)
	if err != nil {
		return nil, errors.New("not a URI")
	}
	if u.Fragment != "" || strings.Contains(v, "#") {
		return nil, errors.New("a URI naming a location has no #fragment")
	}
	return u, nil
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
