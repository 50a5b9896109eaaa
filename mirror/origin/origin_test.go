package origin

import (
	"errors"
	"regexp"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		source    string
		partition int32
		offset    int64
	}{{"dc1", 3, 1200}, {"a.b-c_d", 0, 0}, {"x", 2147483647, 9223372036854775807}} {
		v := Append(nil, c.source, c.partition, c.offset)
		s, p, o, err := Parse(v)
		if err != nil || s != c.source || p != c.partition || o != c.offset {
			t.Errorf("Parse(%q) = %q %d %d %v, want %q %d %d", v, s, p, o, err, c.source, c.partition, c.offset)
		}
	}
	if got := string(Append(nil, "dc1", 3, 1200)); got != "dc1/3/1200" {
		t.Errorf("origin value %q, want dc1/3/1200", got)
	}
	for _, bad := range []string{"", "dc1", "dc1/3", "/3/4", "dc1//4", "dc1/x/4", "dc1/3/", "dc1/-1/4", "dc1/3/-4", "dc1/99999999999/4"} {
		if _, _, _, err := Parse([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// mirrorName is the source names the mirror accepts (mirror.Config).
var mirrorName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func FuzzParse(f *testing.F) {
	f.Add([]byte("dc1/3/1200"))
	f.Add([]byte("a/b/c/d"))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, p, o, err := Parse(v)
		if err != nil || !mirrorName.MatchString(s) {
			return // not one the mirror writes; parsing it is still fine
		}
		// Values with leading zeros or '+' parse to the same numbers;
		// what matters is that re-encoding parses back identically.
		got := Append(nil, s, p, o)
		s2, p2, o2, err := Parse(got)
		if err != nil || s2 != s || p2 != p || o2 != o {
			t.Fatalf("%q -> %q %d %d -> %q does not parse back", v, s, p, o, got)
		}
	})
}
