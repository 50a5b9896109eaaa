package properties

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestReadJavaRules: the cases of java.util.Properties.load's
// documentation and LineReader, with what Java returns for them.
func TestReadJavaRules(t *testing.T) {
	in := "# comment\n" +
		"! another comment \\\n" + // a comment does not continue
		"   \t\f\n" +
		"a=1\n" +
		"b:2\n" +
		"c 3\n" +
		"d\t  =  4 \n" + // whitespace around the separator; the trailing space stays
		"e==5\n" + // the second '=' is the value's
		"f:=6\n" +
		"   g = 7\n" +
		"h\n" + // no value
		"fruits  apple, banana, \\\n" +
		"        cherry\\\n" +
		"\n" + // an empty line ends a continuation
		"after=x\n" +
		"k\\=ey\\ with\\:seps\\#=v\n" +
		"esc=\\t\\n\\r\\f\\\\\\q\\u0041\\u00e9\\uD83D\\uDE00\n" +
		"even=ends with a backslash\\\\\n" +
		"cont=one\\\n#two\n" + // a continuation line starting with # is content
		"crlf=1\r\ncr=2\rlast=3\\"
	got, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": "1", "b": "2", "c": "3", "d": "4 ", "e": "=5", "f": "=6", "g": "7", "h": "",
		"fruits": "apple, banana, cherry", "after": "x",
		"k=ey with:seps#": "v",
		"esc":             "\t\n\r\f\\qAé😀",
		"even":            `ends with a backslash\`,
		"cont":            "one#two",
		"crlf":            "1", "cr": "2", "last": "3",
	}
	if !maps.Equal(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%q = %q, want %q", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected key %q = %q", k, got[k])
			}
		}
	}
}

func TestReadLastDuplicateWins(t *testing.T) {
	got, err := Read(strings.NewReader("k=1\nk=2\n"))
	if err != nil || got["k"] != "2" {
		t.Fatalf("got %v %v, want k=2", got, err)
	}
}

// TestReadBadUnicodeNamesTheLine: every malformed \u is reported with its
// line, all at once.
func TestReadBadUnicodeNamesTheLine(t *testing.T) {
	_, err := Read(strings.NewReader("ok=1\nbad=\\u12G4\nfine=2\n\\u12=short\nx=\\u00"))
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("error %v, want ErrSyntax", err)
	}
	for _, line := range []string{"line 2", "line 4", "line 5"} {
		if !strings.Contains(err.Error(), line) {
			t.Errorf("error %q does not name %s", err, line)
		}
	}
	if strings.Contains(err.Error(), "line 1:") || strings.Contains(err.Error(), "line 3:") {
		t.Errorf("error %q names a good line", err)
	}
}

// FuzzRead: no input makes Read panic, and what it reads writes back to
// the same map.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"a=b", "a\\\n b", "\\u0041=\\uD83D\\uDE00", "#c\n!d\n k : v ", "x\\", "\r\n\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		checkRoundTrip(t, m)
	})
}
