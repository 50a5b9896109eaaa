package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionPrintsName(t *testing.T) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "tributary ") {
		t.Fatalf("version output %q does not start with the binary name", out.String())
	}
}
