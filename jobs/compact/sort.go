package compact

import (
	"bytes"
	"cmp"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultSortBufferBytes is Config.SortBufferBytes' default: the wide
// sample's hour (30,000 rows of 30 fields, about 3.7 KB each decoded) is
// sorted whole.
const DefaultSortBufferBytes = 256 << 20

// avroName is the syntax of an Avro field name, which a sort column is.
var avroName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseSortBy reads sort keys as the CLI takes them, each
// "TOPIC=COL[,COL...]", into Config.SortBy; a topic given twice is an
// error, since which of its keys is meant is not clear.
func ParseSortBy(specs []string) (map[string][]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(specs))
	for _, s := range specs {
		topic, cols, ok := strings.Cut(s, "=")
		topic = strings.TrimSpace(topic)
		if !ok || topic == "" || strings.TrimSpace(cols) == "" {
			return nil, fmt.Errorf("%w: sort key %q: want TOPIC=COL[,COL...]", ErrInvalidConfig, s)
		}
		if _, dup := out[topic]; dup {
			return nil, fmt.Errorf("%w: sort key of topic %q given twice", ErrInvalidConfig, topic)
		}
		list := strings.Split(cols, ",")
		for i := range list {
			list[i] = strings.TrimSpace(list[i])
		}
		out[topic] = list
	}
	if err := validateSortBy(out); err != nil {
		return nil, err
	}
	return out, nil
}

// validateSortBy checks what can be checked without a schema: each topic
// has columns, each an Avro field name, none twice.
func validateSortBy(sortBy map[string][]string) error {
	topics := make([]string, 0, len(sortBy))
	for t := range sortBy {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		cols := sortBy[t]
		if t == "" {
			return fmt.Errorf("%w: sort key for an empty topic name", ErrInvalidConfig)
		}
		if len(cols) == 0 {
			return fmt.Errorf("%w: sort key of topic %q has no columns", ErrInvalidConfig, t)
		}
		for i, c := range cols {
			if !avroName.MatchString(c) {
				return fmt.Errorf("%w: sort key of topic %q: column %q is not a field name", ErrInvalidConfig, t, c)
			}
			if slices.Contains(cols[:i], c) {
				return fmt.Errorf("%w: sort key of topic %q: column %q given twice", ErrInvalidConfig, t, c)
			}
		}
	}
	return nil
}

// sortColumn is one column of a sort key, resolved against a schema.
type sortColumn struct {
	field  string
	unwrap bool // the value is a union with null: nil or {branch: value}
}

// sortKey resolves topic's sort columns (nil: unsorted) against the
// mapped schema root of a schema group: each must be a top-level field of
// a type with an order (a primitive, enum, fixed or logical type, or one
// of them or null). Records, arrays, maps and unions of several types have
// none that readers would agree on.
func (c *Compactor) sortKey(topic string, root *node, schemaID uint32) ([]sortColumn, error) {
	cols := c.cfg.SortBy[topic]
	if len(cols) == 0 {
		return nil, nil
	}
	key := make([]sortColumn, 0, len(cols))
	for _, col := range cols {
		i := slices.IndexFunc(root.children, func(n *node) bool { return n.field == col })
		if i < 0 {
			return nil, fmt.Errorf("%w: sort key of topic %q: column %q is not a top-level field of schema %d", ErrInvalidConfig, topic, col, schemaID)
		}
		n := root.children[i]
		if n.kind != kindLeaf {
			return nil, fmt.Errorf("%w: sort key of topic %q: column %q of schema %d is a record, array, map or union of several types, which has no order", ErrInvalidConfig, topic, col, schemaID)
		}
		key = append(key, sortColumn{field: col, unwrap: n.unwrap})
	}
	return key, nil
}

// sortBuffer holds rows until about limit bytes (estimated as decoded,
// nativeSize), then hands them on ordered by key: a stable sort with nulls
// first, so that ties keep the input order (partition, then offset).
type sortBuffer struct {
	key   []sortColumn
	limit int64
	rows  []keyedRow
	size  int64
	runs  int
	// measured and sampled: the rows measured by nativeSize and their
	// total, whose mean is charged for the others.
	measured, sampled int64
}

// sizeEvery: every sizeEvery-th row is measured (nativeSize walks the
// whole value, 7% of a sorted compaction's CPU if done for every row);
// the rows of one schema are alike enough for the mean of the others.
const sizeEvery = 16

type keyedRow struct {
	rec  any
	keys []any
}

// add buffers rec and reports whether the buffer is full.
func (b *sortBuffer) add(rec any) bool {
	m, _ := rec.(map[string]any)
	keys := make([]any, len(b.key))
	for i, c := range b.key {
		v := m[c.field]
		if c.unwrap && v != nil {
			v = unwrapUnion(v)
		}
		keys[i] = v
	}
	b.rows = append(b.rows, keyedRow{rec: rec, keys: keys})
	var n int64
	if b.measured == 0 || len(b.rows)%sizeEvery == 0 {
		n = nativeSize(rec)
		b.measured++
		b.sampled += n
	} else {
		n = b.sampled / b.measured
	}
	b.size += n + 40 + 16*int64(len(keys))
	return b.size >= b.limit
}

// flush sorts the buffered rows, hands each to write and empties the buffer.
func (b *sortBuffer) flush(write func(any) error) error {
	if len(b.rows) == 0 {
		return nil
	}
	slices.SortStableFunc(b.rows, func(x, y keyedRow) int {
		for i := range x.keys {
			if c := compareNative(x.keys[i], y.keys[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	b.runs++
	for i := range b.rows {
		if err := write(b.rows[i].rec); err != nil {
			return err
		}
		b.rows[i] = keyedRow{} // the writer is done with it after shredding
	}
	b.rows, b.size = b.rows[:0], 0
	return nil
}

// compareNative orders two values of one sort column in goavro's native
// form, nil (null) first, each type by its value as Parquet's logical
// types order it (signed numbers, strings and bytes bytewise, decimals by
// value, false before true).
func compareNative(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch a := a.(type) {
	case string:
		return compareAs(a, b, strings.Compare)
	case int64:
		return compareAs(a, b, cmp.Compare[int64])
	case int32:
		return compareAs(a, b, cmp.Compare[int32])
	case float64:
		return compareAs(a, b, cmp.Compare[float64])
	case float32:
		return compareAs(a, b, cmp.Compare[float32])
	case bool:
		return compareAs(a, b, func(x, y bool) int {
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		})
	case []byte:
		return compareAs(a, b, bytes.Compare)
	case time.Time:
		return compareAs(a, b, time.Time.Compare)
	case time.Duration:
		return compareAs(a, b, cmp.Compare[time.Duration])
	case *big.Rat:
		return compareAs(a, b, (*big.Rat).Cmp)
	}
	return 0
}

// compareAs compares a with b if b is a T too; the schema gives a column
// one type, so another never meets it and is taken as equal rather than
// failing the hour.
func compareAs[T any](a T, b any, f func(T, T) int) int {
	bb, ok := b.(T)
	if !ok {
		return 0
	}
	return f(a, bb)
}

// nativeSize estimates the heap a decoded goavro value holds, for the
// sort buffer's bound: within 10% of the measured 3.7 KB a row of the
// wide sample and 0.6 KB of a page view.
func nativeSize(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := mapSize(len(v))
		for _, x := range v {
			n += nativeSize(x)
		}
		return n
	case []any:
		n := int64(24 + 16*len(v))
		for _, x := range v {
			n += nativeSize(x)
		}
		return n
	case string:
		return 16 + int64(len(v))
	case []byte:
		return 24 + int64(len(v))
	case time.Time:
		return 24
	case *big.Rat:
		return 64 + int64(len(v.Num().Bits())+len(v.Denom().Bits()))*8
	}
	return 8
}

// mapSize is the heap of a map[string]any of n entries: Go's swiss-table
// maps hold 8 slots of key and value (32 bytes) plus a control word per
// group, filled to at most 7/8, in a power-of-two table of groups.
func mapSize(n int) int64 {
	groups := int64(1)
	for groups*7 < int64(n) {
		groups *= 2
	}
	return 48 + groups*(8+8*32)
}
