package serde

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// Latest follows the subject as it gains versions (it is never cached).
func TestLatestFollowsNewVersions(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	c := newRegistryClient(t)
	const v1 = `{"type":"record","name":"E","fields":[{"name":"a","type":"long"}]}`
	const v2 = `{"type":"record","name":"E","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"],"default":null}]}`
	if _, _, err := c.Latest(ctx, "e-value"); !errors.Is(err, ErrRegistry) {
		t.Fatalf("no versions yet: err = %v", err)
	}
	id1, err := c.Register(ctx, "e-value", v1)
	if err != nil {
		t.Fatal(err)
	}
	if id, text, err := c.Latest(ctx, "e-value"); err != nil || id != id1 || !strings.Contains(text, `"a"`) || strings.Contains(text, `"b"`) {
		t.Fatalf("after v1: %d %s %v, want id %d", id, text, err, id1)
	}
	id2, err := c.Register(ctx, "e-value", v2)
	if err != nil {
		t.Fatal(err)
	}
	if id, text, err := c.Latest(ctx, "e-value"); err != nil || id != id2 || id2 == id1 || !strings.Contains(text, `"b"`) {
		t.Fatalf("after v2: %d %s %v, want id %d", id, text, err, id2)
	}
}
