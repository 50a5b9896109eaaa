package properties

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Read parses r in the format of java.util.Properties.load (see the package
// documentation). It returns every malformed line at once, each error
// naming its line and wrapping ErrSyntax.
func Read(r io.Reader) (map[string]string, error) {
	f, err := Parse(r)
	if err != nil {
		return nil, err
	}
	return f.Values, nil
}

// File is a parsed properties file: its values and, for each key, the
// line it was read from (the first line of a continued one, 1-based).
type File struct {
	Values map[string]string
	Lines  map[string]int
	// suspect holds the keys whose value as written (escapes unresolved,
	// so that "a \\# b" is not one) looks like it ends in a comment.
	suspect map[string]bool
}

// Parse is Read that also keeps the line of every key, for messages that
// point into the file (Suspects).
func Parse(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("properties: reading: %w", err)
	}
	lines := naturalLines(data)
	props := map[string]string{}
	at, suspect := map[string]int{}, map[string]bool{}
	var errs []error
	for i := 0; i < len(lines); i++ {
		first := i + 1
		line := trimLeadingSpace(lines[i])
		if len(line) == 0 || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical []byte
		for oddTrailingBackslashes(line) {
			logical = append(logical, line[:len(line)-1]...)
			if i+1 == len(lines) {
				// Java drops a backslash that continues past the end.
				line = nil
				break
			}
			i++
			line = trimLeadingSpace(lines[i])
		}
		logical = append(logical, line...)
		k, v, rawLen, err := splitPair(logical)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: line %d: %v", ErrSyntax, first, err))
			continue
		}
		props[k], at[k] = v, first
		suspect[k] = trailingComment.Match(logical[len(logical)-rawLen:])
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &File{Values: props, Lines: at, suspect: suspect}, nil
}

// Suspect is a value that ends in what looks like a comment written after
// it ("x=5   # five"). java.util.Properties, and so Read, takes it as part
// of the value: '#' and '!' start a comment only at the start of a line.
type Suspect struct {
	Key, Value string
	Line       int
}

func (s Suspect) String() string {
	return fmt.Sprintf("line %d: %s=%q ends in what looks like a comment: %s", s.Line, s.Key, s.Value, commentRule)
}

// Suspects lists the values of f that look like they end in a comment,
// sorted by line: what a caller warns about for the keys whose type
// (a string, a list, a regular expression) lets the getters accept them.
func (f *File) Suspects() []Suspect {
	var out []Suspect
	for k, v := range f.Values {
		if f.suspect[k] {
			out = append(out, Suspect{Key: k, Value: v, Line: f.Lines[k]})
		}
	}
	slices.SortFunc(out, func(a, b Suspect) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// naturalLines splits data at \n, \r and \r\n.
func naturalLines(data []byte) [][]byte {
	var lines [][]byte
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			lines = append(lines, data[start:i])
			start = i + 1
		case '\r':
			lines = append(lines, data[start:i])
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(data) {
		lines = append(lines, data[start:])
	}
	return lines
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeadingSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

func oddTrailingBackslashes(b []byte) bool {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitPair cuts a logical line into its unescaped key and value, as
// Properties.load0 does; rawLen is the length of the value as written.
func splitPair(line []byte) (key, value string, rawLen int, err error) {
	keyEnd, valueStart := len(line), len(line)
	hasSep := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character is part of the key
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if isSpace(c) {
			keyEnd, valueStart = i, i+1
			break
		}
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if !isSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	if key, err = unescape(line[:keyEnd]); err != nil {
		return "", "", 0, fmt.Errorf("key: %v", err)
	}
	if value, err = unescape(line[valueStart:]); err != nil {
		return "", "", 0, fmt.Errorf("key %q: %v", key, err)
	}
	return key, value, len(line) - valueStart, nil
}

// unescape resolves the backslash escapes of s.
func unescape(s []byte) (string, error) {
	out := make([]byte, 0, len(s))
	var pending rune = -1 // a high surrogate waiting for its low half
	flush := func() {
		if pending >= 0 {
			out = utf8.AppendRune(out, utf8.RuneError)
			pending = -1
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			out = append(out, c)
			continue
		}
		i++
		if s[i] != 'u' {
			flush()
			switch s[i] {
			case 't':
				out = append(out, '\t')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 'f':
				out = append(out, '\f')
			default:
				out = append(out, s[i])
			}
			continue
		}
		if len(s)-(i+1) < 4 {
			return "", fmt.Errorf("malformed \\uxxxx escape %q", s[i-1:])
		}
		u, ok := hex4(s[i+1 : i+5])
		if !ok {
			return "", fmt.Errorf("malformed \\uxxxx escape %q", s[i-1:i+5])
		}
		i += 4
		switch {
		case utf16.IsSurrogate(u) && u < 0xdc00:
			flush()
			pending = u
		case utf16.IsSurrogate(u) && pending >= 0:
			out = utf8.AppendRune(out, utf16.DecodeRune(pending, u))
			pending = -1
		default:
			flush()
			out = utf8.AppendRune(out, u) // a lone low surrogate becomes U+FFFD
		}
	}
	flush()
	return string(out), nil
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
