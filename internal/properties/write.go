package properties

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Write writes props to w, keys sorted, one key=value line each, escaped so
// that Read returns props exactly.
func Write(w io.Writer, props map[string]string) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for _, k := range slices.Sorted(maps.Keys(props)) {
		line = escape(line[:0], k, true)
		line = append(line, '=')
		line = escape(line, props[k], false)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("properties: writing: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("properties: writing: %w", err)
	}
	return nil
}

// escape appends s escaped as Properties.saveConvert does: every space of
// a key, only the leading one of a value (Read skips leading whitespace
// but keeps the rest).
func escape(dst []byte, s string, key bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ':
			if key || i == 0 {
				dst = append(dst, '\\')
			}
			dst = append(dst, ' ')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\\', '=', ':', '#', '!':
			dst = append(dst, '\\', c)
		default:
			if c < 0x20 || c == 0x7f {
				dst = fmt.Appendf(dst, `\u%04X`, c)
			} else {
				dst = append(dst, c)
			}
		}
	}
	return dst
}
