package hours

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A path.format (kafka-connect-hdfs's TimeBasedPartitioner) is a Joda-style
// pattern of the partition directories below <base>/<topic>: '/' separates
// directory levels, text in single quotes is literal, and the letters are
// fields of the partition's start in UTC:
//
//	YYYY or yyyy  year (4 digits)     MM  month (01-12)   dd  day (01-31)
//	HH            hour (00-23)        mm  minute (00-59)
//
// Digits, '-', '_' and '=' outside quotes are literal too; other letters and
// characters are refused, as are quotes inside a quoted literal. Every level
// holds at least one field; the pattern must name year, month and day, the
// hour when partitions are shorter than a day and the minute when they are
// shorter than an hour (else two partitions would share a directory). A
// level starting with a quoted name and '=' ('dt'=YYYY-MM-dd) is Hive-style:
// the name (lower case letters, digits, _) is a table partition column and
// the rest its value. Either every level is Hive-style or none is.

// field letters of a path.format, with their widths.
var fieldWidth = map[byte]int{'Y': 4, 'y': 4, 'M': 2, 'd': 2, 'H': 2, 'm': 2}

var columnName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// token is a literal or a field of a path.format level.
type token struct {
	lit   string
	field byte // 0 for a literal; 'Y' for either year letter
}

// level is one directory level of a path.format.
type level struct {
	column string // Hive partition column, "" if not Hive-style
	toks   []token
}

// Layout is a topic's directory layout: its partition duration and the
// pattern of its partition directories.
type Layout struct {
	// Duration is partition.duration.ms (an hour by default).
	Duration time.Duration
	// PathFormat is path.format as given; "" is the default layout
	// yyyy/MM/dd/HH (and /mm below it for a sub-hour duration).
	PathFormat string
	// Stored are the Kafka columns the topic's files hold.
	Stored Stored
	levels []level
}

// DefaultLayout is the layout of a topic without path.format: <yyyy>/<MM>/<dd>/<HH>,
// and /<mm> below that when d is shorter than an hour.
func DefaultLayout(d time.Duration) Layout {
	l, err := NewLayout(d, "")
	if err != nil {
		panic(err) // d was validated by the caller (ValidDuration)
	}
	return l
}

// NewLayout checks a partition duration (ValidDuration) and a path.format
// ("" for the default) and returns their layout. The error says what is
// wrong with the pattern; callers name the key.
func NewLayout(d time.Duration, pathFormat string) (Layout, error) {
	if err := ValidDuration(d); err != nil {
		return Layout{}, err
	}
	pattern := pathFormat
	if pattern == "" {
		pattern = "yyyy/MM/dd/HH"
		if d < time.Hour {
			pattern += "/mm"
		}
	}
	levels, err := parsePattern(pattern)
	if err != nil {
		return Layout{}, fmt.Errorf("%q: %v", pathFormat, err)
	}
	l := Layout{Duration: d, PathFormat: pathFormat, levels: levels}
	need := []struct {
		f    byte
		what string
		ok   bool
	}{{'Y', "year (YYYY)", true}, {'M', "month (MM)", true}, {'d', "day (dd)", true},
		{'H', "hour (HH)", d < 24*time.Hour}, {'m', "minute (mm)", d < time.Hour}}
	for _, n := range need {
		if n.ok && !l.has(n.f) {
			return Layout{}, fmt.Errorf("%q: partitions of %v need the %s in the pattern", pathFormat, d, n.what)
		}
	}
	return l, nil
}

func (l Layout) has(f byte) bool {
	for _, lv := range l.levels {
		for _, t := range lv.toks {
			if t.field == f {
				return true
			}
		}
	}
	return false
}

func parsePattern(p string) ([]level, error) {
	var levels []level
	seen := map[byte]bool{}
	columns := map[string]bool{}
	for i, seg := range strings.Split(p, "/") {
		var toks []token
		quoted := false // the level starts with a quoted literal
		for j := 0; j < len(seg); {
			c := seg[j]
			switch {
			case c == '\'':
				end := strings.IndexByte(seg[j+1:], '\'')
				if end <= 0 {
					return nil, fmt.Errorf("level %d: unterminated or empty quoted text", i+1)
				}
				lit := seg[j+1 : j+1+end]
				if !literalOK(lit, true) {
					return nil, fmt.Errorf("level %d: quoted text %q: only letters, digits, '-' and '_'", i+1, lit)
				}
				quoted = quoted || j == 0
				toks = appendLit(toks, lit)
				j += end + 2
			case fieldWidth[c] != 0:
				n := 0
				for j+n < len(seg) && seg[j+n] == c {
					n++
				}
				if n != fieldWidth[c] {
					return nil, fmt.Errorf("level %d: %s: want %s", i+1, seg[j:j+n], strings.Repeat(string(c), fieldWidth[c]))
				}
				f := c
				if f == 'y' {
					f = 'Y'
				}
				if seen[f] {
					return nil, fmt.Errorf("level %d: %s appears twice", i+1, seg[j:j+n])
				}
				seen[f] = true
				toks = append(toks, token{field: f})
				j += n
			case literalOK(string(c), false) || c == '=':
				toks = appendLit(toks, string(c))
				j++
			default:
				return nil, fmt.Errorf("level %d: %q is not a supported pattern letter or literal (quote text as 'text')", i+1, c)
			}
		}
		lv := level{toks: toks}
		if len(toks) > 0 && toks[0].field == 0 && quoted {
			if name, rest, ok := strings.Cut(toks[0].lit, "="); ok {
				if !columnName.MatchString(name) {
					return nil, fmt.Errorf("level %d: partition column %q: lower case letters, digits and _, starting with a letter", i+1, name)
				}
				if columns[name] {
					return nil, fmt.Errorf("level %d: partition column %q appears twice", i+1, name)
				}
				columns[name] = true
				lv.column = name
				lv.toks = appendLit(nil, rest)
				lv.toks = append(lv.toks, toks[1:]...)
			}
		}
		hasField := false
		for _, t := range lv.toks {
			if t.field != 0 {
				hasField = true
			} else if strings.Contains(t.lit, "=") {
				return nil, fmt.Errorf("level %d: '=' only after a quoted partition column name at the start of a level", i+1)
			}
		}
		if !hasField {
			return nil, fmt.Errorf("level %d (%q): every level needs a time field", i+1, seg)
		}
		if i > 0 && (lv.column == "") != (levels[0].column == "") {
			return nil, fmt.Errorf("either every level is Hive-style ('name'=...) or none is")
		}
		levels = append(levels, lv)
	}
	return levels, nil
}

func appendLit(toks []token, s string) []token {
	if s == "" {
		return toks
	}
	if n := len(toks); n > 0 && toks[n-1].field == 0 {
		toks[n-1].lit += s
		return toks
	}
	return append(toks, token{lit: s})
}

// literalOK: quoted text may hold letters; unquoted literals are digits, '-' and '_'.
func literalOK(s string, quoted bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c == '-', c == '_':
		case quoted && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
		default:
			return false
		}
	}
	return true
}

// Columns are the Hive partition columns of a Hive-style layout, in
// directory order; nil otherwise.
func (l Layout) Columns() []string {
	var out []string
	for _, lv := range l.levels {
		if lv.column != "" {
			out = append(out, lv.column)
		}
	}
	return out
}

// Values are the Hive partition columns' values of the partition starting
// at start (Columns' order); nil for a layout that is not Hive-style.
func (l Layout) Values(start time.Time) []string {
	if l.levels[0].column == "" {
		return nil
	}
	out := make([]string, len(l.levels))
	for i, lv := range l.levels {
		out[i] = lv.format(start.UTC())
	}
	return out
}

func (lv level) format(t time.Time) string {
	var b strings.Builder
	for _, tok := range lv.toks {
		switch tok.field {
		case 0:
			b.WriteString(tok.lit)
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'M':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'm':
			fmt.Fprintf(&b, "%02d", t.Minute())
		}
	}
	return b.String()
}

// name is the directory name of the level for a partition starting at t.
func (lv level) name(t time.Time) string {
	if lv.column != "" {
		return lv.column + "=" + lv.format(t)
	}
	return lv.format(t)
}

// parse reads the fields of one directory name into f; false if the name
// does not match the level.
func (lv level) parse(name string, f map[byte]int) bool {
	if lv.column != "" {
		rest, ok := strings.CutPrefix(name, lv.column+"=")
		if !ok {
			return false
		}
		name = rest
	}
	for _, tok := range lv.toks {
		if tok.field == 0 {
			rest, ok := strings.CutPrefix(name, tok.lit)
			if !ok {
				return false
			}
			name = rest
			continue
		}
		w := fieldWidth[tok.field]
		if len(name) < w {
			return false
		}
		n, err := strconv.Atoi(name[:w])
		if err != nil || n < 0 || name[0] == '+' || name[0] == '-' {
			return false
		}
		f[tok.field] = n
		name = name[w:]
	}
	return name == ""
}

// Dir returns the directory of topic's partition containing t.
func (l Layout) Dir(base, topic string, t time.Time) string {
	start := t.UTC().Truncate(l.Duration)
	parts := []string{base, topic}
	for _, lv := range l.levels {
		parts = append(parts, lv.name(start))
	}
	return path.Join(parts...)
}

// rel is the partition directory of a start relative to the topic directory.
func (l Layout) rel(start time.Time) string {
	parts := make([]string, len(l.levels))
	for i, lv := range l.levels {
		parts[i] = lv.name(start)
	}
	return path.Join(parts...)
}

// startOf parses the names of a partition directory's levels below the
// topic directory: the partition's start, if they are a canonical
// partition directory of the layout.
func (l Layout) startOf(names []string) (time.Time, bool) {
	if len(names) != len(l.levels) {
		return time.Time{}, false
	}
	f := map[byte]int{}
	for i, lv := range l.levels {
		if !lv.parse(names[i], f) {
			return time.Time{}, false
		}
	}
	start := time.Date(f['Y'], time.Month(f['M']), f['d'], f['H'], f['m'], 0, 0, time.UTC)
	if !start.Truncate(l.Duration).Equal(start) || l.rel(start) != path.Join(names...) {
		return time.Time{}, false
	}
	return start, true
}

// Depth is the number of directory levels of a partition directory below
// the topic directory.
func (l Layout) Depth() int { return len(l.levels) }

// Same reports whether two layouts lay a topic out alike.
func (l Layout) Same(o Layout) bool {
	return l.Duration == o.Duration && l.PathFormat == o.PathFormat && l.Stored == o.Stored
}
