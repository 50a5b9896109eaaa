package properties

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGetters(t *testing.T) {
	p := New(map[string]string{
		"s": " snappy ", "i": " 100 ", "neg": "-1", "b1": "TRUE", "b2": " false",
		"d": "1500", "never": "9223372036854775807", "l": " a, ,b ,, c ", "size": "1048576",
		"unread": "x", "ignored": "y",
	})
	if v := p.String("s"); v != "snappy" {
		t.Errorf("String %q", v)
	}
	if v := p.Int32("i", 1); v != 100 {
		t.Errorf("Int32 %d", v)
	}
	if v := p.Int64("neg", -1); v != -1 {
		t.Errorf("Int64 %d", v)
	}
	if !p.Bool("b1", false) || p.Bool("b2", true) || !p.Bool("absent.bool", true) {
		t.Error("Bool")
	}
	if v := p.Duration("d", time.Millisecond, 1); v != 1500*time.Millisecond {
		t.Errorf("Duration %v", v)
	}
	if v := p.Duration("never", time.Millisecond, 1); v < 100*365*24*time.Hour {
		t.Errorf("Long.MAX_VALUE ms = %v, want clamped to a very long time", v)
	}
	if v := p.List("l"); !slices.Equal(v, []string{"a", "b", "c"}) {
		t.Errorf("List %q", v)
	}
	if v := p.Size("size", 1); v != 1<<20 {
		t.Errorf("Size %d", v)
	}
	if v := p.Int("absent.int", 1); v != 0 {
		t.Errorf("absent Int = %d, want 0 (the default)", v)
	}
	p.Ignore("ignored")
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if u := p.Unknown(); !slices.Equal(u, []string{"unread"}) {
		t.Errorf("Unknown %q", u)
	}
}

// TestErrJoinsEveryProblem: all refused values at once, each naming its
// key and value.
func TestErrJoinsEveryProblem(t *testing.T) {
	p := New(map[string]string{
		"zero": "0", "float": "1e3", "empty": " ", "bool": "yes", "big": "4294967296", "neg": "-1",
		"dur": "soon", "ok": "5",
	})
	p.Int32("zero", 1)
	p.Int64("float", 0)
	p.Int("empty", 0)
	p.Bool("bool", false)
	p.Int32("big", 0)
	p.Size("neg", 0)
	p.Duration("dur", time.Millisecond, 0)
	p.Int("ok", 1)
	err := p.Err()
	if !errors.Is(err, ErrValue) {
		t.Fatalf("Err() = %v, want ErrValue", err)
	}
	for _, want := range []string{`zero="0": must be >= 1`, `float="1e3"`, `empty=""`, `bool="yes"`,
		`big="4294967296"`, `neg="-1"`, `dur="soon"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "ok=") {
		t.Errorf("Err() = %q names a good key", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Key != "zero" {
		t.Errorf("errors.As: %+v", e)
	}
}

// TestTrailingComment: a comment written after a value (the README's
// mistake, issue 39) stays part of the value as java.util.Properties has
// it, is listed with its line by Suspects, and is refused by every getter
// whose type cannot hold it, with a reason that says why.
func TestTrailingComment(t *testing.T) {
	in := "# a comment line\n" +
		"output.uri=file:///out    # where the files go\n" +
		"topics=views|clicks   # a regular expression\n" +
		"commit.records=5000 ! five thousand\n" +
		"commit.interval.ms = 60000   # a minute\n" +
		"audit.enable=true  # yes\n" +
		"plain=a#b\n" +
		"frag=file:///out#x\n" +
		"spaced=file:///my dir\n" +
		"escaped=a \\#b\n" // written by Write: meant
	f, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Values["escaped"]; got != "a #b" {
		t.Errorf("escaped = %q", got)
	}
	if got := f.Values["topics"]; got != "views|clicks   # a regular expression" {
		t.Errorf("topics = %q: values are literal", got)
	}
	var got []string
	for _, s := range f.Suspects() {
		got = append(got, fmt.Sprintf("%d %s", s.Line, s.Key))
	}
	want := []string{"2 output.uri", "3 topics", "4 commit.records", "5 commit.interval.ms", "6 audit.enable"}
	if !slices.Equal(got, want) {
		t.Errorf("suspects %q, want %q", got, want)
	}
	if s := f.Suspects()[1].String(); !strings.Contains(s, "line 3: topics=") || !strings.Contains(s, "start of a line") {
		t.Errorf("suspect reads %q", s)
	}

	p := New(f.Values)
	if v := p.URI("output.uri"); v != "" {
		t.Errorf("output.uri accepted as %q", v)
	}
	p.Int64("commit.records", 1)
	p.Duration("commit.interval.ms", time.Millisecond, 1)
	p.Bool("audit.enable", true)
	p.URI("frag")
	p.URI("spaced")
	if s := p.String("topics"); s != "views|clicks   # a regular expression" {
		t.Errorf("String changed the value: %q", s)
	}
	if s := p.URI("plain"); s != "" {
		t.Errorf("a URI with '#' accepted: %q", s)
	}
	err = p.Err()
	var refused []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *Error
		if !errors.As(e, &pe) {
			t.Fatalf("%v is not an *Error", e)
		}
		refused = append(refused, pe.Key)
		comment := errors.Is(e, ErrTrailingComment)
		if wantComment := pe.Key != "frag" && pe.Key != "spaced" && pe.Key != "plain"; comment != wantComment {
			t.Errorf("%v: trailing-comment reason %v, want %v", e, comment, wantComment)
		}
	}
	if want := []string{"output.uri", "commit.records", "commit.interval.ms", "audit.enable", "frag", "spaced", "plain"}; !slices.Equal(refused, want) {
		t.Errorf("refused %q, want %q", refused, want)
	}
	if !strings.Contains(err.Error(), `spaced="file:///my dir": a URI cannot contain spaces`) ||
		!strings.Contains(err.Error(), `frag="file:///out#x": a URI naming a location has no #fragment`) {
		t.Errorf("reasons: %v", err)
	}
	for _, ok := range []string{"file:///out", "hdfs://nn:8020/data", "/local/dir", "http://h:8081/a%20b"} {
		if _, err := ParseURI(ok); err != nil {
			t.Errorf("ParseURI(%q): %v", ok, err)
		}
	}
}
