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

// TestUnknownSubcommandFails: a typo under a group command is an error
// naming the word and the group (cobra alone prints the help and exits 0),
// with the nearest subcommand suggested; the bare group still prints help.
func TestUnknownSubcommandFails(t *testing.T) {
	for _, args := range [][]string{{"topics", "lst"}, {"jobs", "complact"}, {"audit", "reprot"}, {"loader", "hour"}} {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		if err == nil {
			t.Fatalf("tributary %s: no error; output %q", strings.Join(args, " "), out.String())
		}
		if want := "unknown command \"" + args[1] + "\" for \"tributary " + args[0] + "\""; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "did you mean") {
			t.Fatalf("tributary %s: %v; want %s and a suggestion", strings.Join(args, " "), err, want)
		}
	}
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"topics"})
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "Available Commands") {
		t.Fatalf("tributary topics: %v, output %q; want its help", err, out.String())
	}
}
