package main

import (
	"github.com/spf13/cobra"
)

// newAuditCommand groups the audit service and its report.
func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "The audit service and its reports: did every tier see every record?",
	}
	cmd.AddCommand(newAuditServeCommand())
	cmd.AddCommand(newAuditReportCommand())
	return cmd
}
