package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deleteRecordsOptions are the flags of `topics delete-records`.
type deleteRecordsOptions struct {
	topics    topicsOptions
	partition int32
	offset    int64
}

// newTopicsDeleteRecordsCommand is `topics delete-records`, Kafka's
// kafka-delete-records.sh for one topic: every record below --offset (-1:
// the high watermark) of --partition (-1: every partition) is deleted, by
// moving the partitions' log start offset (DeleteRecords).
func newTopicsDeleteRecordsCommand() *cobra.Command {
	o := &deleteRecordsOptions{}
	cmd := &cobra.Command{
		Use:   "delete-records",
		Short: "Delete a topic's records below an offset",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.topics.client.reachError(o.run(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.topics.client.addFlags(cmd.Flags())
	o.topics.fs = cmd.Flags()
	cmd.Flags().StringVar(&o.topics.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&o.partition, "partition", -1, "partition (-1: every partition)")
	cmd.Flags().Int64Var(&o.offset, "offset", 0, "delete every record below this offset, -1: below the high watermark (required)")
	return cmd
}

func (o *deleteRecordsOptions) run(ctx context.Context, out io.Writer) error {
	if err := o.topics.client.validate(); err != nil {
		return err
	}
	if err := checkTopicName(o.topics.topic); err != nil {
		return err
	}
	if err := requireFlag(o.topics.fs, "offset", "an offset, or -1 for the high watermark"); err != nil {
		return err
	}
	if o.offset < -1 {
		return badFlag("offset", strconv.FormatInt(o.offset, 10), "must be an offset, or -1 for the high watermark")
	}
	if o.partition < -1 {
		return badFlag("partition", strconv.Itoa(int(o.partition)), "must be a partition, or -1 for every partition")
	}
	adm, err := o.topics.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.topics.client.requestTimeout)
	defer cancel()

	topic := o.topics.topic
	parts, err := selectPartitions(ctx, adm, topic, o.partition)
	if err != nil {
		return err
	}
	offsets := kadm.Offsets{}
	for _, p := range parts {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: o.offset})
	}
	resp, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		return fmt.Errorf("delete records of %s: %w", topic, err)
	}
	var failed error
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			fmt.Fprintf(out, "Partition %s-%d: error %v\n", r.Topic, r.Partition, r.Err)
			if failed == nil {
				failed = fmt.Errorf("delete records of %s-%d below %d: %w", r.Topic, r.Partition, o.offset, r.Err)
			}
			continue
		}
		fmt.Fprintf(out, "Partition %s-%d: low watermark %d\n", r.Topic, r.Partition, r.LowWatermark)
	}
	return failed
}

// selectPartitions returns the topic's partitions, or only partition when
// it is not -1 (the --partition flag); a partition the topic does not have
// is a flag error.
func selectPartitions(ctx context.Context, adm *kadm.Client, topic string, partition int32) ([]int32, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", topic, err)
	}
	d, ok := details[topic]
	switch {
	case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return nil, fmt.Errorf("%w: %s", errTopicMissing, topic)
	case d.Err != nil:
		return nil, fmt.Errorf("describe topic %s: %w", topic, d.Err)
	}
	return pickPartition(topic, d.Partitions.Numbers(), partition)
}

// pickPartition is all, or only partition when it is not -1, which must be
// one of all.
func pickPartition(topic string, all []int32, partition int32) ([]int32, error) {
	if partition == -1 {
		return all, nil
	}
	if !slices.Contains(all, partition) {
		return nil, badFlag("partition", strconv.Itoa(int(partition)), fmt.Sprintf("topic %s has %d partitions", topic, len(all)))
	}
	return []int32{partition}, nil
}
