package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestDevLogLines: in a dev cluster every broker line names its broker
// once (the cluster member's lines named it twice: broker=1 broker=1), and
// the descriptor budget each broker computes at start is a debug line.
func TestDevLogLines(t *testing.T) {
	r := startDev(t, "--dir", t.TempDir(), "--brokers", "2", "--port", "0", "--log-level", "debug")
	createTopic(t, r.bootstrap[0], "logged", 2)
	r.stop(t)
	out := r.errOut.String()
	attr := regexp.MustCompile(` broker=\S+`)
	joined, budgets := map[string]bool{}, 0
	for _, line := range strings.Split(out, "\n") {
		ids := attr.FindAllString(line, -1)
		if len(ids) > 1 {
			t.Errorf("a line names its broker %d times: %s", len(ids), line)
		}
		if strings.Contains(line, `msg="cluster: joined"`) && len(ids) == 1 {
			joined[ids[0]] = true
		}
		if strings.Contains(line, `msg="descriptor budget"`) {
			budgets++
			if !strings.Contains(line, "level=DEBUG") {
				t.Errorf("descriptor budget logged above debug: %s", line)
			}
		}
	}
	if !joined[" broker=1"] || !joined[" broker=2"] || budgets != 2 {
		t.Fatalf("want a cluster: joined line naming each of brokers 1 and 2 (got %v) and 2 descriptor budgets (got %d):\n%s", joined, budgets, out)
	}
}
