package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testproc"
)

func TestPipelineRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--loader", "sometimes"}, `--loader "sometimes"`},
		{[]string{"--brokers", "0"}, `--brokers "0"`},
		{[]string{"--audit-window", "10ms"}, `--audit-window "10ms"`},
		{[]string{"--rate", "0"}, `--rate "0"`},
		{[]string{"--datacenters", "dc1,analytics"}, `datacenter "analytics"`},
		{[]string{"--zookeeper", "127.0.0.1:2181/bad//path"}, "zookeeper"},
		{[]string{"--hdfs", "namenode"}, `hdfs "namenode"`},
		{[]string{"--log-level", "loud"}, "--log-level"},
	} {
		for _, sub := range []string{"up", "demo"} {
			res := runCLI(t, 10*time.Second, "", append([]string{"pipeline", sub, "--dir", t.TempDir()}, c.args...)...)
			if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
				t.Errorf("pipeline %s %v: error %v, want one naming %q", sub, c.args, res.err, c.want)
			}
		}
	}
}

// TestPipelineUp: `tributary pipeline up` prints where every part listens,
// serves the registry and the audit dashboard, and stops cleanly when its
// context ends (as on Ctrl-C).
func TestPipelineUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
	cmd := newRootCommand()
	cmd.SetArgs([]string{"pipeline", "up", "--dir", t.TempDir(), "--brokers", "1", "--rate", "20",
		"--loader", "continuous", "--log-level", "warn"})
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
		select {
		case err := <-done:
			t.Fatalf("pipeline up exited before its banner: %v\n%s\n%s", err, out, errOut)
		case <-deadline:
			t.Fatalf("no banner within 2 minutes:\n%s\n%s", out, errOut)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, want := range []string{"cluster dc1", "cluster dc2", "cluster analytics", "schema registry    http://",
		"producers          dc1, dc2, 20 page views/s", "loader             analytics -> file://"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	for _, u := range []string{bannerURL(t, out.String(), "schema registry") + "/subjects", bannerURL(t, out.String(), "audit dashboard")} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d %q", u, resp.StatusCode, body)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipeline up: %v\n%s", err, errOut)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("pipeline up did not stop within 2 minutes of its context ending")
	}
}

// bannerURL returns the URL the banner prints after label.
func bannerURL(t *testing.T, s, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(label) + ` +(\S+)$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q line in:\n%s", label, s)
	}
	return m[1]
}
