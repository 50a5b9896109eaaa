package main

import (
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
	// After AddCommand: cobra hands it to every command of the tree.
	root.SetGlobalNormalizationFunc(flagAliases)
	return root
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
