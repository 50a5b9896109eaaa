package avro

import "testing"

func TestNameOf(t *testing.T) {
	for _, c := range []struct {
		def             map[string]any
		ns, full, inner string
	}{
		{map[string]any{"name": "PageView"}, "", "PageView", ""},
		{map[string]any{"name": "PageView"}, "com.example", "com.example.PageView", "com.example"},
		{map[string]any{"name": "PageView", "namespace": "events"}, "com.example", "events.PageView", "events"},
		{map[string]any{"name": "PageView", "namespace": ""}, "com.example", "PageView", ""},
		// A dotted name is full: the namespace attribute and the enclosing
		// namespace are ignored, its children are in its own namespace.
		{map[string]any{"name": "a.b.PageView", "namespace": "events"}, "com.example", "a.b.PageView", "a.b"},
	} {
		full, inner := NameOf(c.def, c.ns)
		if full != c.full || inner != c.inner {
			t.Errorf("NameOf(%v, %q) = %q, %q; want %q, %q", c.def, c.ns, full, inner, c.full, c.inner)
		}
	}
	if got := FullName("Referer", "com.example"); got != "com.example.Referer" {
		t.Errorf("FullName = %q", got)
	}
	if got := FullName("x.Referer", "com.example"); got != "x.Referer" {
		t.Errorf("FullName of a dotted name = %q", got)
	}
}
