package properties

import (
	"errors"
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
