package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/docstest"
)

// TestDocsUseRealFlags finds every `tributary ...` command line in README.md
// and docs/ (in back-quotes and in code blocks; docs/cli is generated) and
// checks that its subcommand exists and that it has each --flag used: an
// example written with a flag the CLI does not have fails here, even where
// internal/docstest cannot run it.
func TestDocsUseRealFlags(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := docstest.DocFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range docs {
		if !strings.HasPrefix(f, filepath.Join("docs", "cli")+string(filepath.Separator)) {
			files = append(files, filepath.Join(root, f))
		}
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, use := range commandLines(string(data)) {
			checked++
			if msg := checkCommandLine(newRootCommand(), use.args); msg != "" {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s:%d: `%s`: %s", rel, use.line, strings.Join(use.args, " "), msg)
			}
		}
	}
	t.Logf("%d tributary command lines checked", checked)
	if checked < 20 {
		t.Fatalf("only %d tributary command lines found in the docs: is the scan broken?", checked)
	}
}

func TestCheckCommandLine(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"tributary topics create --bootstrap 127.0.0.1:9092 --topic t --partitions 3", true},
		{"bin/tributary consume --bootstrap=h:1 --topic t -h", true},
		{"tributary topics create --no-such-flag", false},
		{"tributary topic create --topic t", false},
		{"tributary broker --config server.properties [--override key=value ...]", true},
	} {
		uses := commandLines("`" + c.line + "`")
		if len(uses) != 1 {
			t.Fatalf("%q: %d command lines found", c.line, len(uses))
		}
		if msg := checkCommandLine(newRootCommand(), uses[0].args); (msg == "") != c.ok {
			t.Errorf("%q: %q, want ok=%v", c.line, msg, c.ok)
		}
	}
}

type commandLine struct {
	line int
	args []string // after "tributary"
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	// tributary as a command: at the start, or after a space, $ or (.
	commandRE = regexp.MustCompile(`(?:^|[\s$(])(?:bin/)?tributary\s+([a-z][a-z-]*(?:\s.*)?)$`)
)

// commandLines returns the tributary command lines of a Markdown text: in
// code spans and in fenced blocks, with backslash continuations joined and
// comments cut.
func commandLines(md string) []commandLine {
	var out []commandLine
	lines := strings.Split(md, "\n")
	inFence := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		var candidates []string
		if inFence {
			for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + lines[i]
			}
			candidates = []string{l}
		} else {
			for _, m := range codeSpanRE.FindAllStringSubmatch(l, -1) {
				candidates = append(candidates, m[1])
			}
		}
		for _, c := range candidates {
			c, _, _ = strings.Cut(c, " #")
			c, _, _ = strings.Cut(c, "|")
			c, _, _ = strings.Cut(c, ";")
			c, _, _ = strings.Cut(c, "&&")
			m := commandRE.FindStringSubmatch(strings.TrimRight(c, " &"))
			if m == nil {
				continue
			}
			out = append(out, commandLine{line: i + 1, args: strings.Fields(m[1])})
		}
	}
	return out
}

// checkCommandLine returns "" if args name a command of root and every
// --flag is one of its flags, or what is wrong. Words in [brackets] are
// synopsis notation and are not checked.
func checkCommandLine(root *cobra.Command, args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	cmd, rest, err := root.Find(words)
	if err != nil || cmd == root {
		return "no such command"
	}
	if len(rest) > 0 && cmd.HasSubCommands() && cmd.Args == nil {
		return "no such subcommand " + rest[0]
	}
	for _, a := range args[len(words):] {
		name, ok := strings.CutPrefix(strings.TrimLeft(a, "[("), "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		name = strings.TrimRight(name, "])/,.:")
		if name == "" || name == "help" {
			continue
		}
		if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
			return "unknown flag --" + name
		}
	}
	return ""
}
