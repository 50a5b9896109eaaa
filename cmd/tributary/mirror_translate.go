package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/mirror"
)

// mirrorTranslateOptions are the flags of `tributary mirror translate`.
type mirrorTranslateOptions struct {
	config    string
	overrides []string
	source    string
	group     string
	topic     string
	timeout   time.Duration
}

func newMirrorTranslateCommand() *cobra.Command {
	var o mirrorTranslateOptions
	cmd := &cobra.Command{
		Use:   "translate --config mirror.properties --source NAME --group GROUP [--topic TOPIC]",
		Short: "Print where a source consumer group's committed offsets point on the target",
		Long: "Translate the committed offsets of a consumer group on source NAME into target offsets, " +
			"exactly, with the offset syncs the mirror of mirror.properties recorded on its target " +
			"(emit.checkpoints.enabled). Prints per partition the source committed offset, the target " +
			"topic and offset (the first target record at or past the commit; - when the mirror has not " +
			"reached it yet) and the lag (target end offset minus target offset).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMirrorTranslate(cmd, o) },
	}
	cmd.Flags().StringVar(&o.config, "config", "", "the mirror's mirror.properties file (required)")
	cmd.Flags().StringArrayVar(&o.overrides, "override", nil, "key=value overriding one property")
	cmd.Flags().StringVar(&o.source, "source", "", "source cluster NAME, as in source.NAME.bootstrap.servers (required)")
	cmd.Flags().StringVar(&o.group, "group", "", "the consumer group on the source (required)")
	cmd.Flags().StringVar(&o.topic, "topic", "", "only this source topic")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long")
	return cmd
}

func runMirrorTranslate(cmd *cobra.Command, o mirrorTranslateOptions) error {
	if o.source == "" || o.group == "" {
		return errors.New("--source and --group are required")
	}
	props, err := readPropertiesFile(o.config, o.overrides)
	if err != nil {
		return err
	}
	cfg, _, err := mirror.ConfigFromProperties(props)
	if err != nil {
		return err
	}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, o.timeout)
	defer cancel()
	trs, err := mirror.Translate(ctx, cfg, o.source, o.group, o.topic)
	if err != nil {
		return err
	}
	if len(trs) == 0 {
		return fmt.Errorf("group %s has no committed offset on source %s for a mirrored topic", o.group, o.source)
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSOURCE-OFFSET\tTARGET-TOPIC\tTARGET-OFFSET\tLAG")
	for _, tr := range trs {
		target, lag := "-", "-"
		if tr.OK {
			target = strconv.FormatInt(tr.TargetOffset, 10)
			if tr.TargetEnd >= 0 {
				lag = strconv.FormatInt(max(0, tr.TargetEnd-tr.TargetOffset), 10)
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\n", tr.Topic, tr.Partition, tr.SourceOffset, tr.TargetTopic, target, lag)
	}
	return w.Flush()
}
