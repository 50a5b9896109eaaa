package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestCLIReferenceUpToDate regenerates the CLI reference and compares it with
// the committed docs/cli: a flag, command or help text changed without `make
// docs` fails here.
func TestCLIReferenceUpToDate(t *testing.T) {
	committed := filepath.Join("..", "..", cliReferenceDir)
	fresh := t.TempDir()
	if err := writeCLIReference(fresh); err != nil {
		t.Fatal(err)
	}
	if diffs := diffMarkdownDirs(t, committed, fresh); len(diffs) > 0 {
		t.Fatalf("the CLI reference in %s is stale; run `make docs` and commit the result:\n  %s",
			cliReferenceDir, joinLines(diffs))
	}
}

// TestCLIReferenceDetectsStaleness proves the comparison: a committed file
// edited by hand, one missing and one left over are each reported.
func TestCLIReferenceDetectsStaleness(t *testing.T) {
	committed, fresh := t.TempDir(), t.TempDir()
	if err := writeCLIReference(committed); err != nil {
		t.Fatal(err)
	}
	if err := writeCLIReference(fresh); err != nil {
		t.Fatal(err)
	}
	if diffs := diffMarkdownDirs(t, committed, fresh); len(diffs) != 0 {
		t.Fatalf("two generations differ (not reproducible): %v", diffs)
	}
	edit := filepath.Join(committed, "tributary_topics_create.md")
	if err := os.WriteFile(edit, []byte("hand-edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(committed, "tributary_version.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(committed, "tributary_gone.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := diffMarkdownDirs(t, committed, fresh)
	want := []string{
		"tributary_gone.md: no such command any more",
		"tributary_topics_create.md: differs from what the commands generate",
		"tributary_version.md: missing",
	}
	if joinLines(got) != joinLines(want) {
		t.Fatalf("diffs:\n  %s\nwant:\n  %s", joinLines(got), joinLines(want))
	}
}

// diffMarkdownDirs lists, sorted, the *.md files that differ between the
// committed and the freshly generated reference.
func diffMarkdownDirs(t *testing.T, committed, fresh string) []string {
	t.Helper()
	read := func(dir string) map[string][]byte {
		files, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string][]byte, len(files))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m[filepath.Base(f)] = b
		}
		return m
	}
	have, want := read(committed), read(fresh)
	var diffs []string
	for name, w := range want {
		h, ok := have[name]
		switch {
		case !ok:
			diffs = append(diffs, name+": missing")
		case !bytes.Equal(h, w):
			diffs = append(diffs, name+": differs from what the commands generate")
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, name+": no such command any more")
		}
	}
	sort.Strings(diffs)
	return diffs
}

func joinLines(lines []string) string { return strings.Join(lines, "\n  ") }

// TestREADMENamesEveryCommand checks the README's one sentence that names
// the subcommands against the command tree (the full list is the generated
// CLI reference).
func TestREADMENamesEveryCommand(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sentence, ok := strings.Cut(string(data), "Each part is a subcommand of one binary")
	if !ok {
		t.Fatal(`README.md: no "Each part is a subcommand of one binary" sentence`)
	}
	sentence, _, _ = strings.Cut(sentence, "[CLI reference]")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(sentence, -1) {
		named[m[1]] = true
	}
	var missing []string
	for _, c := range newRootCommand().Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Name() != "completion" && c.Name() != "version" {
			if !named[c.Name()] {
				missing = append(missing, c.Name())
			}
			delete(named, c.Name())
		}
	}
	delete(named, "tributary")
	for n := range named {
		missing = append(missing, n+" (no such command)")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("README.md's list of commands is stale: %s", strings.Join(missing, ", "))
	}
}
