package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// reassignOptions are the flags of `topics reassign`.
type reassignOptions struct {
	topics    topicsOptions
	partition int32
	replicas  string
	cancel    bool
	wait      bool
	verify    bool
}

// reassignPoll spaces the looks at the reassignments in progress under
// --wait.
const reassignPoll = 200 * time.Millisecond

// newTopicsReassignCommand is `topics reassign`, kafka-reassign-partitions
// for one topic without a JSON file: --replicas 1,3 moves --partition P
// (default every partition) to those brokers, the first preferred as
// leader; --verify shows the reassignments in progress; --cancel cancels
// the reassignments in progress (of --partition, or of every partition
// that has one); --wait waits, within --request-timeout, until none of
// those asked for is in progress: a move is in progress until all its
// target replicas are in the ISR.
func newTopicsReassignCommand() *cobra.Command {
	o := &reassignOptions{}
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move a topic's replicas to other brokers (or cancel a move)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	o.topics.client.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.topics.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&o.partition, "partition", -1, "partition (-1: every partition)")
	cmd.Flags().StringVar(&o.replicas, "replicas", "", "the new replicas, comma-separated broker ids, preferred leader first")
	cmd.Flags().BoolVar(&o.cancel, "cancel", false, "cancel the reassignments in progress instead")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until the topic has no reassignment in progress")
	cmd.Flags().BoolVar(&o.verify, "verify", false, "only show which partitions have a reassignment in progress (a move is until its new replicas are in sync)")
	return cmd
}

// parseReplicas parses --replicas.
func (o *reassignOptions) parseReplicas() ([]int32, error) {
	switch {
	case o.verify && (o.cancel || o.replicas != "" || o.wait):
		return nil, fmt.Errorf("%w: --verify cannot be given with --replicas, --cancel or --wait", errBadFlag)
	case o.verify:
		return nil, nil
	case o.cancel && o.replicas != "":
		return nil, badFlag("replicas", o.replicas, "cannot be given with --cancel")
	case o.cancel:
		return nil, nil
	case o.replicas == "":
		return nil, badFlag("replicas", "", "required (or --cancel)")
	}
	var out []int32
	for _, f := range strings.Split(o.replicas, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || id < 0 {
			return nil, badFlag("replicas", o.replicas, "want comma-separated broker ids")
		}
		if slices.Contains(out, int32(id)) {
			return nil, badFlag("replicas", o.replicas, fmt.Sprintf("broker %d given twice", id))
		}
		out = append(out, int32(id))
	}
	return out, nil
}

func (o *reassignOptions) run(ctx context.Context, out io.Writer) error {
	if err := o.topics.client.validate(); err != nil {
		return err
	}
	topic := o.topics.topic
	if err := checkTopicName(topic); err != nil {
		return err
	}
	replicas, err := o.parseReplicas()
	if err != nil {
		return err
	}
	adm, err := o.topics.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.topics.client.requestTimeout)
	defer cancel()

	parts, err := selectPartitions(ctx, adm, topic, o.partition)
	if err != nil {
		return err
	}
	if o.verify {
		return o.printVerify(ctx, adm, out, parts)
	}
	if o.cancel && o.partition == -1 {
		// Topic-wide, as kafka-reassign-partitions --cancel: only the
		// partitions with a reassignment in progress are cancelled.
		if parts, err = o.inProgress(ctx, adm, parts); err != nil {
			return err
		}
		if len(parts) == 0 {
			fmt.Fprintf(out, "Topic %s: no reassignment in progress\n", topic)
			return nil
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range parts {
		if o.cancel {
			req.CancelAssign(topic, p)
		} else {
			req.Assign(topic, p, replicas)
		}
	}
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign %s: %w", topic, err)
	}
	var failed error
	topicWide := o.cancel && o.partition == -1
	if topicWide && !slices.ContainsFunc(slices.Collect(maps.Values(resp[topic])), func(r kadm.AlterPartitionAssignmentsResponse) bool {
		return !errors.Is(r.Err, kerr.NoReassignmentInProgress)
	}) {
		// Listed in progress by a broker whose metadata lagged, done or
		// cancelled by the time the controller looked: nothing to cancel.
		fmt.Fprintf(out, "Topic %s: no reassignment in progress\n", topic)
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(resp[topic])) {
		r := resp[topic][p]
		switch {
		case topicWide && errors.Is(r.Err, kerr.NoReassignmentInProgress):
			fmt.Fprintf(out, "Partition %s-%d: no reassignment in progress\n", topic, p)
		case r.Err != nil:
			fmt.Fprintf(out, "Partition %s-%d: error %v\n", topic, p, r.Err)
			if failed == nil {
				failed = fmt.Errorf("reassign %s-%d: %w%s", topic, p, r.Err, errDetail(r.ErrMessage))
			}
		case o.cancel:
			fmt.Fprintf(out, "Partition %s-%d: reassignment cancelled\n", topic, p)
		default:
			fmt.Fprintf(out, "Partition %s-%d: reassignment to %s started\n", topic, p, joinIDs(replicas))
		}
	}
	if failed != nil || !o.wait {
		return failed
	}
	for {
		pending, err := o.inProgress(ctx, adm, parts)
		if err != nil && ctx.Err() != nil {
			// --request-timeout ran out while asking, not between asks.
			return fmt.Errorf("waiting for the reassignments of %s: %w", topic, ctx.Err())
		}
		if err != nil {
			return err
		}
		// The broker answering may not show a reassignment just written
		// yet: a move is done once the replicas are the target and all of
		// them are in sync (KIP-455: the controller completes it then).
		if !slices.ContainsFunc(pending, func(p int32) bool { _, ok := req[topic][p]; return ok }) &&
			(o.cancel || o.moved(ctx, adm, req[topic], replicas)) {
			fmt.Fprintf(out, "Topic %s: no reassignment in progress\n", topic)
			return nil
		}
		select {
		case <-time.After(reassignPoll):
		case <-ctx.Done():
			return fmt.Errorf("waiting for the reassignments of %s: %w", topic, ctx.Err())
		}
	}
}

// printVerify prints, per partition, the reassignment in progress (its
// replicas, the adding and the removing ones) or that there is none, as
// kafka-reassign-partitions --verify reports.
func (o *reassignOptions) printVerify(ctx context.Context, adm *kadm.Client, out io.Writer, parts []int32) error {
	set := kadm.TopicsSet{}
	set.Add(o.topics.topic, parts...)
	listed, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return fmt.Errorf("listing the reassignments of %s: %w", o.topics.topic, err)
	}
	for _, p := range parts {
		r, ok := listed[o.topics.topic][p]
		if !ok {
			fmt.Fprintf(out, "Partition %s-%d: no reassignment in progress\n", o.topics.topic, p)
			continue
		}
		fmt.Fprintf(out, "Partition %s-%d: reassignment in progress\tReplicas: %s\tAdding: %s\tRemoving: %s\n",
			o.topics.topic, p, joinIDs(r.Replicas), joinIDs(r.AddingReplicas), joinIDs(r.RemovingReplicas))
	}
	return nil
}

// inProgress lists which of the topic's partitions parts have a
// reassignment in progress. (kadm asks nothing for a nil set: the
// partitions must be named.)
func (o *reassignOptions) inProgress(ctx context.Context, adm *kadm.Client, parts []int32) ([]int32, error) {
	set := kadm.TopicsSet{}
	set.Add(o.topics.topic, parts...)
	listed, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("listing the reassignments of %s: %w", o.topics.topic, err)
	}
	return slices.Sorted(maps.Keys(listed[o.topics.topic])), nil
}

// moved reports whether every partition in parts has the target replicas,
// every one of them in the ISR.
func (o *reassignOptions) moved(ctx context.Context, adm *kadm.Client, parts map[int32][]int32, target []int32) bool {
	// kadm answers ListTopics from the client's cached metadata, up to
	// MetadataMinAge (5 s) old; asking for the authorized operations
	// sends a Metadata request each time.
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), o.topics.topic)
	if err != nil {
		return false
	}
	d := details[o.topics.topic]
	for p := range parts {
		pd, ok := d.Partitions[p]
		if !ok || !slices.Equal(pd.Replicas, target) ||
			slices.ContainsFunc(target, func(id int32) bool { return !slices.Contains(pd.ISR, id) }) {
			return false
		}
	}
	return true
}
