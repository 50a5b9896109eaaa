package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicsOptions holds the flags of every `topics` subcommand; each
// subcommand registers only the ones it uses.
type topicsOptions struct {
	client            clientOptions
	topic             string
	partitions        int32
	replicationFactor int16
	configs           []string
	ifNotExists       bool

	fs *pflag.FlagSet // the subcommand's flags, for the required ones
}

func newTopicsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Create, list, describe, alter, reassign and delete topics, and delete records (like kafka-topics.sh)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTopicsCreateCommand(), newTopicsListCommand(),
		newTopicsDescribeCommand(), newTopicsDeleteCommand(), newTopicsAlterCommand(),
		newTopicsDeleteRecordsCommand(), newTopicsReassignCommand())
	return cmd
}

func newTopicsCreateCommand() *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a topic",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.client.reachError(o.runCreate(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.client.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&o.partitions, "partitions", 1, "number of partitions")
	cmd.Flags().Int16Var(&o.replicationFactor, "replication-factor", 1, "replicas per partition")
	cmd.Flags().StringArrayVar(&o.configs, "config", nil, "topic config KEY=VALUE (repeatable)")
	cmd.Flags().BoolVar(&o.ifNotExists, "if-not-exists", false, "succeed if the topic already exists")
	return cmd
}

func newTopicsListCommand() *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.client.reachError(o.runList(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.client.addFlags(cmd.Flags())
	return cmd
}

func newTopicsDescribeCommand() *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Describe a topic's partitions, leaders and configs (all topics without --topic)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.client.reachError(o.runDescribe(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.client.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.topic, "topic", "", "topic name (default: every topic)")
	return cmd
}

func newTopicsDeleteCommand() *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete a topic",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.client.reachError(o.runDelete(cmd.Context(), cmd.OutOrStdout()))
		},
	}
	o.client.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.topic, "topic", "", "topic name (required)")
	return cmd
}

// parseConfigs turns repeated --config KEY=VALUE flags into the map kadm
// sends; a key given twice is an error rather than a silent override.
func parseConfigs(kvs []string) (map[string]*string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, badFlag("config", kv, "want KEY=VALUE")
		}
		if _, dup := out[k]; dup {
			return nil, badFlag("config", kv, "key "+k+" given twice")
		}
		out[k] = kadm.StringPtr(v)
	}
	return out, nil
}

func (o *topicsOptions) validateCreate() (map[string]*string, error) {
	if err := o.client.validate(); err != nil {
		return nil, err
	}
	if err := checkTopicName(o.topic); err != nil {
		return nil, err
	}
	if o.partitions < 1 {
		return nil, badFlag("partitions", strconv.Itoa(int(o.partitions)), "must be at least 1")
	}
	if o.replicationFactor < 1 {
		return nil, badFlag("replication-factor", strconv.Itoa(int(o.replicationFactor)), "must be at least 1")
	}
	return parseConfigs(o.configs)
}

func (o *topicsOptions) runCreate(ctx context.Context, out io.Writer) error {
	configs, err := o.validateCreate()
	if err != nil {
		return err
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()

	resp, err := adm.CreateTopic(ctx, o.partitions, o.replicationFactor, configs, o.topic)
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists) && o.ifNotExists:
		return nil
	case err != nil:
		return fmt.Errorf("create topic %s: %w%s", o.topic, err, errDetail(resp.ErrMessage))
	}
	fmt.Fprintf(out, "Created topic %s.\n", o.topic)
	return nil
}

func (o *topicsOptions) runList(ctx context.Context, out io.Writer) error {
	if err := o.client.validate(); err != nil {
		return err
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()

	details, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	for _, name := range details.Names() {
		fmt.Fprintln(out, name)
	}
	return nil
}

func (o *topicsOptions) runDescribe(ctx context.Context, out io.Writer) error {
	if err := o.client.validate(); err != nil {
		return err
	}
	if o.topic != "" {
		if err := checkTopicName(o.topic); err != nil {
			return err
		}
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()

	var names []string
	if o.topic != "" {
		names = []string{o.topic}
	}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topics: %w", err)
	}
	if o.topic != "" {
		if d, ok := details[o.topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("%w: %s", errTopicMissing, o.topic)
		}
	}
	configs, err := describeConfigs(ctx, adm, details.Names())
	if err != nil {
		return err
	}
	for _, d := range details.Sorted() {
		if d.Err != nil {
			return fmt.Errorf("describe topic %s: %w", d.Topic, d.Err)
		}
		writeTopicDescription(out, d, configs[d.Topic])
	}
	return nil
}

// describeConfigs returns, per topic, the configs set on the topic itself
// (not broker defaults), which is what kafka-topics.sh prints, and the
// cleanup policy whatever its source (delete or compact says what the
// topic is, a stream of events or a latest value per key). A broker that
// does not implement DescribeConfigs gets empty configs rather than a failed
// describe, since partitions and leaders are the main content.
func describeConfigs(ctx context.Context, adm *kadm.Client, topics []string) (map[string][]kadm.Config, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	supported := false
	versions.Each(func(v kadm.BrokerApiVersions) {
		if _, ok := v.KeyMaxVersion(kmsg.DescribeConfigs.Int16()); ok {
			supported = true
		}
	})
	if !supported {
		return nil, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	out := make(map[string][]kadm.Config, len(rcs))
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("describe configs of %s: %w%s", rc.Name, rc.Err, errDetail(rc.ErrMessage))
		}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.Key == "cleanup.policy" {
				out[rc.Name] = append(out[rc.Name], c)
			}
		}
	}
	return out, nil
}

// writeTopicDescription prints one topic in kafka-topics.sh --describe form.
func writeTopicDescription(out io.Writer, d kadm.TopicDetail, configs []kadm.Config) {
	parts := d.Partitions.Sorted()
	rf := 0
	if len(parts) > 0 {
		rf = len(parts[0].Replicas)
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	kvs := make([]string, 0, len(configs))
	for _, c := range configs {
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		kvs = append(kvs, c.Key+"="+v)
	}
	fmt.Fprintf(out, "Topic: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		d.Topic, len(parts), rf, strings.Join(kvs, ","))
	for _, p := range parts {
		// Kafka's TopicCommand adds the offline replicas only when there are.
		offline := ""
		if len(p.OfflineReplicas) > 0 {
			offline = "\tOffline: " + joinIDs(p.OfflineReplicas)
		}
		fmt.Fprintf(out, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s%s\n",
			d.Topic, p.Partition, leaderString(p.Leader), joinIDs(p.Replicas), joinIDs(p.ISR), offline)
	}
}

func leaderString(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func (o *topicsOptions) runDelete(ctx context.Context, out io.Writer) error {
	if err := o.client.validate(); err != nil {
		return err
	}
	if err := checkTopicName(o.topic); err != nil {
		return err
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()

	resp, err := adm.DeleteTopic(ctx, o.topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("%w: %s", errTopicMissing, o.topic)
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w%s", o.topic, err, errDetail(resp.ErrMessage))
	}
	fmt.Fprintf(out, "Deleted topic %s.\n", o.topic)
	return nil
}

// errDetail appends the broker's optional error message, if it sent one.
func errDetail(msg string) string {
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}
