package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// cliReferenceDir is where `make docs` writes the CLI reference, relative to
// the repository root.
const cliReferenceDir = "docs/cli"

// newGenDocsCommand is the hidden `tributary gen-docs`: it writes the CLI
// reference (one Markdown file per command, cobra's doc format) from the
// command tree itself, so the reference cannot drift from the flags. `make
// docs` runs it; TestCLIReferenceUpToDate fails when the committed files
// differ from what it writes.
func newGenDocsCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "gen-docs [--dir docs/cli]",
		Short:  "Write the CLI reference as Markdown (make docs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := writeCLIReference(dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the CLI reference to %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", cliReferenceDir, "directory to write the Markdown files into (its old *.md files are replaced)")
	return cmd
}

// writeCLIReference replaces the *.md files of dir with the reference of a
// fresh command tree (fresh so that nothing parsed from this process's own
// command line shows up as a default).
func writeCLIReference(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	root := newRootCommand()
	root.DisableAutoGenTag = true // no date line: the files must be reproducible
	// Markdown links between the files, relative, as GitHub renders them.
	linkHandler := func(name string) string { return name }
	prepender := func(string) string { return "" }
	if err := doc.GenMarkdownTreeCustom(root, dir, prepender, linkHandler); err != nil {
		return fmt.Errorf("writing the CLI reference: %w", err)
	}
	return writeCLIIndex(root, dir)
}

// writeCLIIndex writes dir/README.md: every command with its one-line
// summary, the one list of commands the other documents link to.
func writeCLIIndex(root *cobra.Command, dir string) error {
	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("Generated from the commands by `make docs` (the hidden `tributary gen-docs`); do not edit by hand.\n")
	b.WriteString("`make build` puts the binary at `bin/tributary`.\n\n")
	b.WriteString("| command | what it does |\n|---|---|\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			name := strings.ReplaceAll(sub.CommandPath(), " ", "_") + ".md"
			fmt.Fprintf(&b, "| [`%s`](%s) | %s |\n", sub.CommandPath(), name, strings.ReplaceAll(sub.Short, "|", `\|`))
			walk(sub)
		}
	}
	walk(root)
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(b.String()), 0o644)
}
