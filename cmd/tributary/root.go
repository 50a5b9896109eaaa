package main

import "github.com/spf13/cobra"

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
	return root
}
