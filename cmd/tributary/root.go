package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newRootCommand builds the command tree. Each subcommand lives in a file of
// its own and is registered here.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "tributary",
		Short:         "Tributary: a Kafka-compatible log pipeline",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newTopicsCommand())
	root.AddCommand(newProduceCommand())
	root.AddCommand(newConsumeCommand())
	root.AddCommand(newBenchCommand())
	root.AddCommand(newBrokerCommand())
	root.AddCommand(newRegistryCommand())
	root.AddCommand(newDevCommand())
	root.AddCommand(newAuditCommand())
	root.AddCommand(newPipelineCommand())
	root.AddCommand(newMirrorCommand())
	root.AddCommand(newJobsCommand())
	root.AddCommand(newLoaderCommand())
	root.AddCommand(newCertsCommand())
	root.AddCommand(newSoakCommand())
	root.AddCommand(newLinkCommand())
	root.AddCommand(newGenDocsCommand())
	// After AddCommand: cobra hands it to every command of the tree.
	root.SetGlobalNormalizationFunc(flagAliases)
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every group command below the root (topics,
// jobs, audit, ...) fail on a word that names none of its subcommands:
// cobra prints such a group's help and exits 0 for `tributary topics lst`,
// a typo that did nothing. Without arguments the group still prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if c == c.Root() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	// cobra's own default, which it sets only for the root's suggestions.
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			msg += " (did you mean " + strings.Join(near, " or ") + "?)"
		}
		return errors.New(msg + "; see " + cmd.CommandPath() + " --help")
	}
}

// flagAliases gives every command the spellings of Kafka's tools for its
// flags: --bootstrap-server is --bootstrap wherever a command takes one.
// Help and errors show the name the command registered.
func flagAliases(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "bootstrap-server" {
		return "bootstrap"
	}
	return pflag.NormalizedName(name)
}

// invokedAs is how the user ran this binary, for hints they can paste back
// into the same shell: "bin/tributary" when run as bin/tributary.
func invokedAs() string { return invocationName(os.Args[0]) }

// invocationName is argv0 as typed, except that a `go run` build or a test
// binary, whose argv0 is a build artefact, is "tributary"; a name with
// characters the shell would read is single-quoted.
func invocationName(argv0 string) string {
	if filepath.Base(argv0) != "tributary" || strings.Contains(filepath.ToSlash(argv0), "/go-build") {
		return "tributary"
	}
	if strings.ContainsAny(argv0, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return "'" + strings.ReplaceAll(argv0, "'", `'\''`) + "'"
	}
	return argv0
}
