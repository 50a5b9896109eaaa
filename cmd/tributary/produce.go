package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/audit"
)

// maxLineBytes bounds one stdin line; longer lines are an error rather than
// an unbounded allocation.
const maxLineBytes = 16 << 20

// maxReportedErrors bounds how many individual record failures are printed;
// the final summary still counts all of them.
const maxReportedErrors = 10

type produceOptions struct {
	client       clientOptions
	producer     producerFlags
	topic        string
	keySeparator string
	partition    int32
	noAudit      bool
	audit        auditFlags
}

func newProduceCommand() *cobra.Command {
	o := &produceOptions{}
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce one record per line of standard input (like kafka-console-producer)",
		Long: "Produce reads standard input and sends one record per line. With --key-separator, the\n" +
			"text before the first separator is the key and the rest the value. It flushes at end of\n" +
			"input and exits non-zero if any record was not acknowledged. Before reading, it fails (within\n" +
			"--request-timeout) when no broker answers, or the topic does not exist and the brokers do not\n" +
			"create topics on first use (auto.create.topics.enable).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return o.run(ctx, cmd.InOrStdin(), cmd.ErrOrStderr())
		},
	}
	o.client.addFlags(cmd.Flags())
	o.producer.addFlags(cmd.Flags(), "-1")
	cmd.Flags().StringVar(&o.topic, "topic", "", "topic to produce to (required)")
	cmd.Flags().StringVar(&o.keySeparator, "key-separator", "", "split each line into KEY SEP VALUE at the first SEP")
	cmd.Flags().Int32Var(&o.partition, "partition", -1, "produce every record to this partition (-1: by key, or sticky)")
	cmd.Flags().BoolVar(&o.noAudit, "no-audit", false, "do not count records for the audit (the producer tier audits by default)")
	o.audit.addFlags(cmd.Flags())
	return cmd
}

func (o *produceOptions) validate() error {
	if err := o.client.validate(); err != nil {
		return err
	}
	if err := checkTopicName(o.topic); err != nil {
		return err
	}
	if err := o.producer.validate(); err != nil {
		return err
	}
	if o.partition < -1 {
		return badFlag("partition", strconv.Itoa(int(o.partition)), "must be a partition number >= 0")
	}
	if !o.noAudit {
		return o.audit.validate()
	}
	return nil
}

// produceTally counts outcomes from promises, which kgo calls serially but
// on its own goroutine.
type produceTally struct {
	mu     sync.Mutex
	failed int
	errOut io.Writer
}

func (t *produceTally) fail(line int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed++
	if t.failed <= maxReportedErrors {
		fmt.Fprintf(t.errOut, "produce: line %d: %v\n", line, err)
	}
}

func (o *produceOptions) run(ctx context.Context, in io.Reader, errOut io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	opts := o.producer.kgoOpts()
	// Like the Java console producer, let a broker with
	// auto.create.topics.enable create the topic on first use.
	opts = append(opts, kgo.DefaultProduceTopic(o.topic), kgo.AllowAutoTopicCreation())
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := o.client.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := o.checkTopic(ctx, cl); err != nil {
		return err
	}
	var counter *auditCounter
	if !o.noAudit {
		if counter, err = o.audit.start(audit.TierProducer, o.client.connection(), nil); err != nil {
			return err
		}
	}

	tally := &produceTally{errOut: errOut}
	sep := []byte(o.keySeparator)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	lines := 0
	for sc.Scan() {
		lines++
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		rec := &kgo.Record{Partition: o.partition}
		if len(sep) > 0 {
			k, v, ok := bytes.Cut(line, sep)
			if !ok {
				tally.fail(lines, fmt.Errorf("no key separator %q in line", o.keySeparator))
				continue
			}
			// The scanner reuses its buffer, and kgo keeps the slices
			// until the promise runs, so copy.
			rec.Key = bytes.Clone(k)
			rec.Value = bytes.Clone(v)
		} else {
			rec.Value = bytes.Clone(line)
		}
		n := lines
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				tally.fail(n, err)
			} else if counter != nil {
				counter.Count(r.Topic, r.Timestamp, 1, int64(len(r.Key)+len(r.Value)))
			}
		})
		if ctx.Err() != nil {
			break
		}
	}
	scanErr := sc.Err()
	if errors.Is(scanErr, bufio.ErrTooLong) {
		scanErr = fmt.Errorf("line %d is longer than %d bytes", lines+1, maxLineBytes)
	}
	// Flush even after a read error or a signal so that what was read is
	// either acknowledged or counted as failed.
	if err := cl.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	// Every acknowledgement is counted now: publish the last counts.
	auditCtx, cancelAudit := context.WithTimeout(context.WithoutCancel(ctx), auditCloseTimeout)
	auditErr := counter.close(auditCtx)
	cancelAudit()
	tally.mu.Lock()
	failed := tally.failed
	tally.mu.Unlock()
	switch {
	case scanErr != nil:
		return fmt.Errorf("read standard input: %w", scanErr)
	case failed > 0:
		return fmt.Errorf("%w: %d of %d records were not produced", errRecordsFailed, failed, lines)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d lines: %w", lines, ctx.Err())
	case auditErr != nil:
		return auditErr
	}
	return nil
}

// checkTopic asks the brokers for the topic before standard input is read:
// brokers that cannot be reached, a topic that is not there and will not be
// created, or a --partition it does not have fail here in one line, where
// the producer would fail every record after --delivery-timeout.
func (o *produceOptions) checkTopic(ctx context.Context, cl *kgo.Client) error {
	parts, err := producibleTopic(ctx, &o.client, cl, o.topic)
	if err != nil || parts == nil {
		return err
	}
	_, err = pickPartition(o.topic, parts, o.partition)
	return err
}

// producibleTopic asks the brokers for topic within co's --request-timeout,
// with a Metadata request that lets a broker with auto.create.topics.enable
// create it, as a producer's own requests do. It returns the topic's
// partitions; none (and no error) when the topic was just created and its
// leaders are not elected yet (the producer waits for them). Every command
// that produces checks its topic here first.
func producibleTopic(ctx context.Context, co *clientOptions, cl *kgo.Client, topic string) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, co.requestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, co.reachError(fmt.Errorf("describe topic %s: %w", topic, err))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("%w: %s (and the brokers do not create topics on first use)", errTopicMissing, topic)
		case errors.Is(err, kerr.LeaderNotAvailable):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("describe topic %s: %w", topic, err)
		}
		parts := make([]int32, len(t.Partitions))
		for i, p := range t.Partitions {
			parts[i] = p.Partition
		}
		return parts, nil
	}
	return nil, fmt.Errorf("%w: %s", errTopicMissing, topic)
}
