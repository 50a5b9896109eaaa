package icereader

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Equal reports whether two values read (or expected) are the same value of
// the same Go type: NaN equals NaN, structs, lists and maps compare member
// by member (maps in order), and int32(1) is not int64(1).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || math.IsNaN(float64(x)) && math.IsNaN(float64(y)))
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, Equal)
	case []MapEntry:
		y, ok := b.([]MapEntry)
		return ok && slices.EqualFunc(x, y, func(p, q MapEntry) bool { return Equal(p.Key, q.Key) && Equal(p.Value, q.Value) })
	}
	return reflect.DeepEqual(a, b)
}

// DiffRows compares rows read with the rows wanted, in order, column by
// column of want's rows (columns only got has are differences too), and
// describes the first differences found; "" if there are none.
func DiffRows(want, got []map[string]any) string {
	var diffs []string
	add := func(format string, args ...any) {
		if len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	if len(want) != len(got) {
		add("%d rows, want %d", len(got), len(want))
	}
	for i := range min(len(want), len(got)) {
		cols := make([]string, 0, len(want[i]))
		for c := range want[i] {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		for _, c := range cols {
			g, ok := got[i][c]
			if !ok {
				add("row %d: no column %s", i, c)
			} else if !Equal(want[i][c], g) {
				add("row %d, %s: got %s, want %s", i, c, show(g), show(want[i][c]))
			}
		}
		for c := range got[i] {
			if _, ok := want[i][c]; !ok {
				add("row %d: column %s not wanted", i, c)
			}
		}
	}
	return strings.Join(diffs, "\n")
}

// show prints a value with its Go type, so that int32(1) and int64(1)
// read apart.
func show(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// SortRows sorts rows by the values of column, which must be of one
// integer, string, Date, TimeOfDay or Timestamp type, or null (first).
func SortRows(rows []map[string]any, column string) {
	slices.SortStableFunc(rows, func(a, b map[string]any) int {
		return compareKey(a[column], b[column])
	})
}

func compareKey(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case int8:
		return cmp.Compare(x, b.(int8))
	case int16:
		return cmp.Compare(x, b.(int16))
	case int32:
		return cmp.Compare(x, b.(int32))
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return cmp.Compare(x, b.(string))
	case Date:
		return cmp.Compare(x, b.(Date))
	case TimeOfDay:
		return cmp.Compare(x, b.(TimeOfDay))
	case Timestamp:
		return cmp.Compare(x.Micros, b.(Timestamp).Micros)
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
