package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/jobs/compact"
	"github.com/tributary/tributary/loader"
)

// loaderHoursOptions are the flags of `tributary loader hours`.
type loaderHoursOptions struct {
	loaderOptions
	topic    string
	json     bool
	auditURL string
	delay    time.Duration
}

func newLoaderHoursCommand() *cobra.Command {
	var o loaderHoursOptions
	cmd := &cobra.Command{
		Use:   "hours --config loader.properties --topic T [--json]",
		Short: "List a topic's partitions (hours) with their state (loading, waiting-for-audit, ready, ready-incomplete, compacted) and counts",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runLoaderHours(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "the loader's properties file (required): output.uri, name and the HDFS keys")
	f.StringArrayVar(&o.overrides, "override", nil, "key=value overriding the file (repeatable)")
	f.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	f.StringVar(&o.topic, "topic", "", "the topic (required)")
	f.BoolVar(&o.json, "json", false, "print a JSON array instead of a table")
	f.StringVar(&o.auditURL, "audit-url", "", "the audit service (http://host:port): current counts of partitions not ready yet")
	f.DurationVar(&o.delay, "delay", compact.DefaultDelay, "the compact job's delay past a partition's end (loading until the loader committed past it)")
	return cmd
}

func runLoaderHours(cmd *cobra.Command, o loaderHoursOptions) error {
	logger, err := newLogger(cmd, o.logLevel)
	if err != nil {
		return err
	}
	if o.topic == "" {
		return errors.New("--topic is required")
	}
	cfg, err := loaderConfig(o.loaderOptions, logger)
	if err != nil {
		return err
	}
	audit, err := auditSource(o.auditURL)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext(cmd)
	defer cancel()
	fsys, base, err := openBase(ctx, "output.uri", cfg.OutputURI, cfg.HDFS.WithLogger(logger))
	if err != nil {
		return err
	}
	defer fsys.Close()
	if err := checkTopic(fsys, base, "--topic", cfg.OutputURI, o.topic); err != nil {
		return err
	}
	closed, err := loader.CommittedThrough(ctx, fsys, base, cfg.Name)
	if err != nil {
		return err
	}
	rep, err := hours.Report(ctx, fsys, base, o.topic, closed, o.delay, audit)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.json {
		if rep == nil {
			rep = []hours.HourReport{}
		}
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(out, string(b))
		return nil
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tSTATE\tPRODUCER\tLOADER\tSHORTFALL\tFILES\tFORMAT\tLATE\tLOCATION")
	for _, r := range rep {
		counts := "-\t-\t-"
		if r.Audited {
			counts = fmt.Sprintf("%d\t%d\t%d", r.Producer, r.Loader, r.Shortfall)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Hour.String(), r.State, counts, r.Files, r.Format, lateFiles(r.Status), r.Location)
	}
	return tw.Flush()
}

// lateFiles is the LATE column: the loader files that came after an
// hour's compaction and wait in its directory for the next one to merge
// them, "-" when none.
func lateFiles(st hours.Status) string {
	if st.LateFiles == 0 {
		return "-"
	}
	return fmt.Sprintf("%d (%d B, to recompact)", st.LateFiles, st.LateBytes)
}
