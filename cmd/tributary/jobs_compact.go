package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newJobsCompactCommand() *cobra.Command {
	return &cobra.Command{Use: "compact", Short: "Compact closed hours of Avro into Parquet", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}

func newJobsRetentionCommand() *cobra.Command {
	return &cobra.Command{Use: "retention", Short: "Delete hours older than a per-topic age", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("not yet") }}
}
