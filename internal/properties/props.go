package properties

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Error is a refused value: the key, its value (trimmed) and why.
type Error struct {
	Key, Value string
	Err        error
}

func (e *Error) Error() string { return fmt.Sprintf("%s=%q: %v", e.Key, e.Value, e.Err) }

// Unwrap makes an Error match ErrValue and its reason.
func (e *Error) Unwrap() []error { return []error{ErrValue, e.Err} }

// Props reads typed values out of a property map, remembering which keys
// were read and every value refused. See the package documentation for the
// rules the getters share.
type Props struct {
	m    map[string]string
	used map[string]bool
	errs []error
}

// New wraps m, which Props does not modify.
func New(m map[string]string) *Props {
	return &Props{m: m, used: map[string]bool{}}
}

// Keys returns every key, sorted.
func (p *Props) Keys() []string { return slices.Sorted(maps.Keys(p.m)) }

// Lookup returns the trimmed value of key and whether it is present, and
// marks key read.
func (p *Props) Lookup(key string) (string, bool) {
	p.used[key] = true
	v, ok := p.m[key]
	return strings.TrimSpace(v), ok
}

// Ignore marks keys read without reading them: keys accepted on purpose
// and without effect.
func (p *Props) Ignore(keys ...string) {
	for _, k := range keys {
		p.used[k] = true
	}
}

// Reject records that the value of key is refused, for reason.
func (p *Props) Reject(key string, reason error) {
	p.used[key] = true
	p.errs = append(p.errs, &Error{Key: key, Value: strings.TrimSpace(p.m[key]), Err: reason})
}

// Err returns every refused value, errors.Join of *Error in the order
// read, or nil.
func (p *Props) Err() error { return errors.Join(p.errs...) }

// Unknown returns the keys not read, sorted.
func (p *Props) Unknown() []string {
	var out []string
	for _, k := range p.Keys() {
		if !p.used[k] {
			out = append(out, k)
		}
	}
	return out
}

// String returns the trimmed value of key, "" when absent.
func (p *Props) String(key string) string {
	v, _ := p.Lookup(key)
	return v
}

// List returns the comma-separated items of key (see SplitList); nil when
// absent.
func (p *Props) List(key string) []string {
	v, _ := p.Lookup(key)
	return SplitList(v)
}

// Bool returns key as a boolean, def when absent.
func (p *Props) Bool(key string, def bool) bool {
	v, ok := p.Lookup(key)
	if !ok {
		return def
	}
	b, err := ParseBool(v)
	if err != nil {
		p.Reject(key, err)
		return def
	}
	return b
}

// URI returns key as a URI (see ParseURI), "" when absent or refused.
func (p *Props) URI(key string) string {
	v, ok := p.Lookup(key)
	if !ok || v == "" {
		return v
	}
	if _, err := ParseURI(v); err != nil {
		p.Reject(key, err)
		return ""
	}
	return v
}

func (p *Props) integer(key string, bits int, min int64) int64 {
	v, ok := p.Lookup(key)
	if !ok {
		return 0
	}
	n, err := ParseInt(v, bits, min)
	if err != nil {
		p.Reject(key, err)
		return 0
	}
	return n
}

// Int returns key as an integer >= min (of 32 bits, as Kafka's int), 0
// when absent or refused.
func (p *Props) Int(key string, min int) int { return int(p.integer(key, 32, int64(min))) }

// Int32 returns key as a 32-bit integer >= min, 0 when absent or refused.
func (p *Props) Int32(key string, min int32) int32 { return int32(p.integer(key, 32, int64(min))) }

// Int16 returns key as a 16-bit integer >= min, 0 when absent or refused.
func (p *Props) Int16(key string, min int16) int16 { return int16(p.integer(key, 16, int64(min))) }

// Int64 returns key as a 64-bit integer >= min, 0 when absent or refused.
func (p *Props) Int64(key string, min int64) int64 { return p.integer(key, 64, min) }

// Size returns key as a count of bytes >= min, 0 when absent or refused.
func (p *Props) Size(key string, min int64) int64 { return p.integer(key, 64, max(min, 0)) }

// Duration returns key as an integer count of unit >= min units (Kafka's
// "*.ms" keys are milliseconds), 0 when absent or refused.
func (p *Props) Duration(key string, unit time.Duration, min int64) time.Duration {
	v, ok := p.Lookup(key)
	if !ok {
		return 0
	}
	d, err := ParseDuration(v, unit, min)
	if err != nil {
		p.Reject(key, err)
		return 0
	}
	return d
}
