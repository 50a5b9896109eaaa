package main

import (
	"strings"
	"testing"
	"time"
)

// TestSoakBadFlags: bad flags fail before anything starts, naming the
// flag.
func TestSoakBadFlags(t *testing.T) {
	repo := "../.."
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"soak", "--python", "/bin/true", "--repo", repo, "--rate", "0"}, "--rate"},
		{[]string{"soak", "--python", "/bin/true", "--repo", repo, "--duration", "-1s"}, "--duration"},
		{[]string{"soak", "--python", "", "--repo", repo}, "--python"},
		{[]string{"soak", "--python", "/bin/true", "--repo", t.TempDir()}, "--repo"},
		{[]string{"soak", "produce", "--registry", "http://127.0.0.1:1", "--datacenter", "dc1", "--stats", "x"}, "--bootstrap"},
		{[]string{"soak", "produce", "--bootstrap", "127.0.0.1:1", "--registry", "http://127.0.0.1:1", "--datacenter", "dc1", "--stats", "x", "--rate", "-2"}, "--rate"},
		{[]string{"soak", "produce", "--bootstrap", "127.0.0.1:1", "--registry", "http://127.0.0.1:1", "--datacenter", "dc1", "--stats", "x", "--command-config", "/nonexistent/client.properties"}, "--command-config"},
		{[]string{"soak", "produce", "--bootstrap", "127.0.0.1:1", "--registry", "http://127.0.0.1:1", "--datacenter", "dc1", "--stats", "x", "--topic", "page views"}, "--topic"},
	}
	for _, c := range cases {
		r := runCLI(t, 30*time.Second, "", c.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: err %v, want one naming %s", c.args, r.err, c.want)
		}
	}
}
