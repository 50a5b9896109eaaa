package security

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The login modules of Kafka's Java client whose credentials we read.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// JAASEntry is one login module of a JAAS configuration:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";
type JAASEntry struct {
	// Module is the login module's class name.
	Module string
	// Flag is the control flag, lower case: required, requisite,
	// sufficient or optional.
	Flag string
	// Options are the key=value pairs, in any order.
	Options map[string]string
}

// ParseJAAS parses the value of sasl.jaas.config as Kafka's JaasConfig does
// (java.io.StreamTokenizer with '-', '_' and '$' as word characters): one
// or more entries "MODULE FLAG (KEY=VALUE)* ;", where a value is a quoted
// string ("..." or '...', with Java's escapes \n \t \b \f \r \a \v,
// octal \ooo and \x for any other x) or an unquoted word (starting with a
// letter, '_' or '$'; then letters, digits, '.', '-', '_', '$'). Comments
// are // to the end of the line and /* ... */. Where Java would quietly end
// an unterminated quoted string at the end of its line, ParseJAAS refuses
// it. Errors wrap ErrBadJAAS.
func ParseJAAS(s string) ([]JAASEntry, error) {
	t := &jaasTokenizer{s: s}
	var entries []JAASEntry
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		e, err := parseEntry(t, tok)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: login module not specified", ErrBadJAAS)
	}
	return entries, nil
}

func parseEntry(t *jaasTokenizer, first token) (JAASEntry, error) {
	if first.kind != tokWord && first.kind != tokQuoted {
		return JAASEntry{}, fmt.Errorf("%w: want a login module class name, found %s", ErrBadJAAS, first)
	}
	e := JAASEntry{Module: first.text, Options: map[string]string{}}
	tok, err := t.next()
	if err != nil {
		return e, err
	}
	if tok.kind == tokEOF {
		return e, fmt.Errorf("%w: login module control flag not specified", ErrBadJAAS)
	}
	switch f := strings.ToLower(tok.text); {
	case tok.kind == tokWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
		e.Flag = f
	default:
		return e, fmt.Errorf("%w: invalid login module control flag %s: want required, requisite, sufficient or optional", ErrBadJAAS, tok)
	}
	for {
		tok, err := t.next()
		if err != nil {
			return e, err
		}
		switch {
		case tok.kind == tokOrdinary && tok.text == ";":
			return e, nil
		case tok.kind == tokEOF:
			return e, fmt.Errorf("%w: entry of %s not terminated by ';'", ErrBadJAAS, e.Module)
		case tok.kind != tokWord && tok.kind != tokQuoted:
			return e, fmt.Errorf("%w: want an option name, found %s", ErrBadJAAS, tok)
		}
		key := tok.text
		eq, err := t.next()
		if err != nil {
			return e, err
		}
		val, err := t.next()
		if err != nil {
			return e, err
		}
		if eq.kind != tokOrdinary || eq.text != "=" || (val.kind != tokWord && val.kind != tokQuoted) {
			return e, fmt.Errorf("%w: value not specified for key %q (quote values that do not start with a letter)", ErrBadJAAS, key)
		}
		e.Options[key] = val.text
	}
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokQuoted
	tokNumber   // StreamTokenizer's numbers: no string value, so never a valid value
	tokOrdinary // any other character, alone
)

type token struct {
	kind tokenKind
	text string
}

// String describes a token for an error without quoting a secret: quoted
// strings and words are not shown.
func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "the end"
	case tokNumber:
		return "a number"
	case tokOrdinary:
		return fmt.Sprintf("%q", t.text)
	}
	return "a string"
}

type jaasTokenizer struct {
	s string
	i int
}

func isWordStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '$' || r >= 0xa0
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func isWordPart(r rune) bool { return isWordStart(r) || isDigit(r) || r == '.' || r == '-' }

func (t *jaasTokenizer) peek() (rune, int) {
	if t.i >= len(t.s) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(t.s[t.i:])
}

func (t *jaasTokenizer) next() (token, error) {
	for {
		r, n := t.peek()
		switch {
		case r < 0:
			return token{kind: tokEOF}, nil
		case r <= ' ':
			t.i += n
			continue
		case r == '/':
			if err := t.comment(); err != nil {
				return token{}, err
			}
			continue
		case r == '"' || r == '\'':
			return t.quoted(r)
		case isDigit(r) || r == '.' || r == '-':
			if tok, ok := t.number(); ok {
				return tok, nil
			}
		case isWordStart(r):
			start := t.i
			for {
				r, n := t.peek()
				if r < 0 || !isWordPart(r) {
					break
				}
				t.i += n
			}
			return token{kind: tokWord, text: t.s[start:t.i]}, nil
		}
		t.i += n
		return token{kind: tokOrdinary, text: string(r)}, nil
	}
}

// comment skips a comment at '/': /* to */, or (// and a lone '/', which
// StreamTokenizer takes as its comment character) to the end of the line.
func (t *jaasTokenizer) comment() error {
	if strings.HasPrefix(t.s[t.i:], "/*") {
		end := strings.Index(t.s[t.i+2:], "*/")
		if end < 0 {
			return fmt.Errorf("%w: unterminated /* comment", ErrBadJAAS)
		}
		t.i += 2 + end + 2
		return nil
	}
	if end := strings.IndexAny(t.s[t.i:], "\r\n"); end >= 0 {
		t.i += end
	} else {
		t.i = len(t.s)
	}
	return nil
}

// number consumes what StreamTokenizer parses as a number: '-'? then
// digits and at most one '.'. A '-' or '.' followed by no digit is not a
// number (false, nothing consumed), except that Java reads "." as 0.0.
func (t *jaasTokenizer) number() (token, bool) {
	j := t.i
	if t.s[j] == '-' {
		j++
		if j == len(t.s) || !(isDigit(rune(t.s[j])) || t.s[j] == '.') {
			return token{}, false
		}
	}
	dot := false
	for j < len(t.s) && (isDigit(rune(t.s[j])) || t.s[j] == '.' && !dot) {
		dot = dot || t.s[j] == '.'
		j++
	}
	t.i = j
	return token{kind: tokNumber}, true
}

func (t *jaasTokenizer) quoted(q rune) (token, error) {
	t.i++ // the opening quote
	var b strings.Builder
	for {
		if t.i >= len(t.s) || t.s[t.i] == '\n' || t.s[t.i] == '\r' {
			return token{}, fmt.Errorf("%w: unterminated quoted string", ErrBadJAAS)
		}
		r, n := utf8.DecodeRuneInString(t.s[t.i:])
		t.i += n
		if r == q {
			return token{kind: tokQuoted, text: b.String()}, nil
		}
		if r != '\\' {
			b.WriteString(t.s[t.i-n : t.i]) // as written, even invalid UTF-8 (as words keep it)
			continue
		}
		if t.i >= len(t.s) {
			return token{}, fmt.Errorf("%w: unterminated quoted string", ErrBadJAAS)
		}
		r, n = utf8.DecodeRuneInString(t.s[t.i:])
		t.i += n
		switch r {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		default:
			if r < '0' || r > '7' {
				b.WriteString(t.s[t.i-n : t.i])
				continue
			}
			// Up to three octal digits, the first <= 3 for a third (Java).
			v, max := int(r-'0'), 2
			if r > '3' {
				max = 1
			}
			for ; max > 0 && t.i < len(t.s) && t.s[t.i] >= '0' && t.s[t.i] <= '7'; max-- {
				v = v*8 + int(t.s[t.i]-'0')
				t.i++
			}
			b.WriteRune(rune(v))
		}
	}
}

// SASLFromJAAS reads the credentials of a client's sasl.jaas.config: one
// PlainLoginModule or ScramLoginModule entry with username and password
// options, as the Java client requires. mechanism is the client's
// sasl.mechanism and is not checked against the module (the Java client
// accepts either module with either mechanism: both only hold the
// credentials).
func SASLFromJAAS(mechanism, jaas string) (SASL, error) {
	entries, err := ParseJAAS(jaas)
	if err != nil {
		return SASL{}, err
	}
	if len(entries) != 1 {
		return SASL{}, fmt.Errorf("%w: %d login modules, a client wants exactly one", ErrBadJAAS, len(entries))
	}
	e := entries[0]
	switch e.Module {
	case PlainLoginModule, ScramLoginModule:
	default:
		return SASL{}, fmt.Errorf("%w: login module %q: want %s or %s", ErrBadJAAS, e.Module, PlainLoginModule, ScramLoginModule)
	}
	s := SASL{Mechanism: mechanism, Username: e.Options["username"], Password: e.Options["password"]}
	var missing []string
	if _, ok := e.Options["username"]; !ok {
		missing = append(missing, "username")
	}
	if _, ok := e.Options["password"]; !ok {
		missing = append(missing, "password")
	}
	if len(missing) > 0 {
		return SASL{}, fmt.Errorf("%w: %s needs option %s", ErrBadJAAS, e.Module, strings.Join(missing, " and "))
	}
	return s, nil
}
