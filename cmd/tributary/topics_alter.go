package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
)

// newTopicsAlterCommand is `topics alter --topic T --partitions N`, Kafka's
// kafka-topics.sh --alter --partitions: it grows a topic to N partitions
// (CreatePartitions); the brokers assign the new ones as they would a new
// topic's. Fewer partitions than today is refused by the broker.
func newTopicsAlterCommand() *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "alter",
		Short: "Grow a topic to more partitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.client.reachError(o.runAlter(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.client.addFlags(cmd.Flags())
	o.fs = cmd.Flags()
	cmd.Flags().StringVar(&o.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&o.partitions, "partitions", 0, "the topic's new partition count (required)")
	return cmd
}

func (o *topicsOptions) runAlter(ctx context.Context, out io.Writer) error {
	if err := o.client.validate(); err != nil {
		return err
	}
	if err := checkTopicName(o.topic); err != nil {
		return err
	}
	if err := requireFlag(o.fs, "partitions", "the new partition count"); err != nil {
		return err
	}
	if o.partitions < 1 {
		return badFlag("partitions", strconv.Itoa(int(o.partitions)), "must be at least 1")
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()

	resp, err := adm.UpdatePartitions(ctx, int(o.partitions), o.topic)
	if err == nil {
		r := resp[o.topic]
		if err = r.Err; err != nil {
			return fmt.Errorf("alter topic %s: %w%s", o.topic, err, errDetail(r.ErrMessage))
		}
	}
	if err != nil {
		return fmt.Errorf("alter topic %s: %w", o.topic, err)
	}
	fmt.Fprintf(out, "Topic %s now has %d partitions.\n", o.topic, o.partitions)
	return nil
}
