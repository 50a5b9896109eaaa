package mirror

import (
	"errors"
	"testing"
)

func TestOriginRoundTrip(t *testing.T) {
	for _, c := range []struct {
		source    string
		partition int32
		offset    int64
	}{{"dc1", 3, 1200}, {"a.b-c_d", 0, 0}, {"x", 2147483647, 9223372036854775807}} {
		v := appendOrigin(nil, c.source, c.partition, c.offset)
		s, p, o, err := ParseOrigin(v)
		if err != nil || s != c.source || p != c.partition || o != c.offset {
			t.Errorf("ParseOrigin(%q) = %q %d %d %v, want %q %d %d", v, s, p, o, err, c.source, c.partition, c.offset)
		}
	}
	if got := string(appendOrigin(nil, "dc1", 3, 1200)); got != "dc1/3/1200" {
		t.Errorf("origin value %q, want dc1/3/1200", got)
	}
	for _, bad := range []string{"", "dc1", "dc1/3", "/3/4", "dc1//4", "dc1/x/4", "dc1/3/", "dc1/-1/4", "dc1/3/-4", "dc1/99999999999/4"} {
		if _, _, _, err := ParseOrigin([]byte(bad)); !errors.Is(err, ErrBadOrigin) {
			t.Errorf("ParseOrigin(%q) = %v, want ErrBadOrigin", bad, err)
		}
	}
}

func FuzzParseOrigin(f *testing.F) {
	f.Add([]byte("dc1/3/1200"))
	f.Add([]byte("a/b/c/d"))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, p, o, err := ParseOrigin(v)
		if err != nil {
			return
		}
		if !sourceName.MatchString(s) {
			return // not one this mirror writes; parsing it is still fine
		}
		if got := string(appendOrigin(nil, s, p, o)); got != string(v) && len(v) > 0 && v[len(v)-1] != '0' {
			// Values with leading zeros or '+' parse to the same numbers;
			// what matters is that re-encoding parses back identically.
			s2, p2, o2, err := ParseOrigin([]byte(got))
			if err != nil || s2 != s || p2 != p || o2 != o {
				t.Fatalf("%q -> %q %d %d -> %q does not parse back", v, s, p, o, got)
			}
		}
	})
}
