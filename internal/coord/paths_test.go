package coord

import (
	"errors"
	"testing"
)

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/brokers/ids/1", "/a.b", "/..x", "/Zürich", "/x-0000000001"} {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "a", "a/b", "/a/", "//", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a\x00", "/a\x1f", "/a\u0085", "/a\ufff0"} {
		if err := ValidatePath(p); !errors.Is(err, ErrBadPath) {
			t.Errorf("ValidatePath(%q) = %v, want ErrBadPath", p, err)
		}
	}
}

func TestJoinParentBase(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Join("/brokers", "ids", "1"), "/brokers/ids/1"},
		{Join("/", "a"), "/a"},
		{Join("/"), "/"},
		{Join("/a/"), "/a"},
		{Parent("/a/b/c"), "/a/b"},
		{Parent("/a"), "/"},
		{Parent("/"), "/"},
		{Base("/a/b/c"), "c"},
		{Base("/a"), "a"},
		{Base("/"), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a/b", "/a//b", "a", "/a/../b", "/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidatePath(p) != nil || p == "/" {
			return
		}
		// A valid path splits into a valid parent and a non-empty name
		// that join back to it.
		if err := ValidatePath(Parent(p)); err != nil {
			t.Fatalf("parent of valid %q invalid: %v", p, err)
		}
		if Base(p) == "" || Join(Parent(p), Base(p)) != p {
			t.Fatalf("split of %q: parent %q base %q", p, Parent(p), Base(p))
		}
	})
}
