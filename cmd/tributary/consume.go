package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
)

type consumeOptions struct {
	client         clientOptions
	topic          string
	partition      int32
	offset         string
	maxMessages    int64
	printKey       bool
	printOffset    bool
	printPartition bool
	keySeparator   string
	timeoutMs      int64
	auditTier      string
	audit          auditFlags
}

func newConsumeCommand() *cobra.Command {
	o := &consumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Print a topic's records, one value per line (like kafka-console-consumer)",
		Long: "Consume prints record values one per line. It stops after --max-messages records, or\n" +
			"when --timeout-ms passes with no new record (exit status 0 in both cases), or on SIGINT.\n" +
			"Without --partition it reads every partition of the topic, without a consumer group.\n" +
			"It fails at once (within --request-timeout) when no broker answers or the topic does not exist.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.client.addFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.topic, "topic", "", "topic to consume (required)")
	fs.Int32Var(&o.partition, "partition", -1, "consume only this partition (-1: every partition)")
	fs.StringVar(&o.offset, "offset", "latest", "where to start: earliest, latest or an offset N (in every consumed partition)")
	fs.Int64Var(&o.maxMessages, "max-messages", 0, "exit after this many records (0: no limit)")
	fs.BoolVar(&o.printKey, "print-key", false, "print KEY<separator>VALUE; a missing key prints as null")
	fs.BoolVar(&o.printOffset, "print-offset", false, "prefix each record with Offset:N and a tab")
	fs.BoolVar(&o.printPartition, "print-partition", false, "prefix each record with Partition:P and a tab")
	fs.StringVar(&o.keySeparator, "key-separator", "\t", "separator printed between key and value")
	fs.Int64Var(&o.timeoutMs, "timeout-ms", 0, "exit when no record arrives for this long (0: wait forever)")
	fs.StringVar(&o.auditTier, "audit-tier", "", "count the records received as this audit tier (default: no audit)")
	o.audit.addFlags(fs)
	return cmd
}

// parseOffset reads the --offset flag: earliest, latest or a non-negative
// offset.
func parseOffset(s string) (kgo.Offset, error) {
	switch s {
	case "earliest", "beginning":
		return kgo.NewOffset().AtStart(), nil
	case "latest", "end":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, badFlag("offset", s, "want earliest, latest or an offset >= 0")
	}
	return kgo.NewOffset().At(n), nil
}

func (o *consumeOptions) validate() (kgo.Offset, error) {
	if err := o.client.validate(); err != nil {
		return kgo.Offset{}, err
	}
	if err := checkTopicName(o.topic); err != nil {
		return kgo.Offset{}, err
	}
	if o.partition < -1 {
		return kgo.Offset{}, badFlag("partition", strconv.Itoa(int(o.partition)), "must be a partition number >= 0")
	}
	if o.maxMessages < 0 {
		return kgo.Offset{}, badFlag("max-messages", strconv.FormatInt(o.maxMessages, 10), "must be >= 0")
	}
	if o.timeoutMs < 0 {
		return kgo.Offset{}, badFlag("timeout-ms", strconv.FormatInt(o.timeoutMs, 10), "must be >= 0")
	}
	if o.auditTier != "" {
		if o.auditTier == audit.TierProducer {
			return kgo.Offset{}, badFlag("audit-tier", o.auditTier, "the producer tier is the producers'; name the consumer's tier")
		}
		if err := o.audit.validate(); err != nil {
			return kgo.Offset{}, err
		}
	}
	return parseOffset(o.offset)
}

// recordFormatter writes records in kafka-console-consumer's layout.
type recordFormatter struct {
	printKey, printOffset, printPartition bool
	keySeparator                          string
}

func (f recordFormatter) write(w *bufio.Writer, r *kgo.Record) {
	if f.printPartition {
		w.WriteString("Partition:")
		w.WriteString(strconv.Itoa(int(r.Partition)))
		w.WriteByte('\t')
	}
	if f.printOffset {
		w.WriteString("Offset:")
		w.WriteString(strconv.FormatInt(r.Offset, 10))
		w.WriteByte('\t')
	}
	if f.printKey {
		if r.Key == nil {
			w.WriteString("null")
		} else {
			w.Write(r.Key)
		}
		w.WriteString(f.keySeparator)
	}
	if r.Value == nil {
		w.WriteString("null")
	} else {
		w.Write(r.Value)
	}
	w.WriteByte('\n')
}

func (o *consumeOptions) run(ctx context.Context, out, errOut io.Writer) (err error) {
	start, err := o.validate()
	if err != nil {
		return err
	}
	var opts []kgo.Opt
	// Where an offset is out of range, do what kafka-console-consumer's
	// auto.offset.reset does: earliest only when asked to start there.
	reset := kgo.NewOffset().AtEnd()
	if o.offset == "earliest" || o.offset == "beginning" {
		reset = kgo.NewOffset().AtStart()
	}
	opts = append(opts, kgo.ConsumeResetOffset(reset))
	if o.partition >= 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			o.topic: {o.partition: start},
		}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(o.topic), kgo.ConsumeStartOffset(start))
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
	if o.auditTier != "" {
		if counter, err = o.audit.start(o.auditTier, o.client.connection(), nil); err != nil {
			return err
		}
		// Publish the last counts however consuming ends.
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditCloseTimeout)
			defer cancel()
			if cerr := counter.close(ctx); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}

	f := recordFormatter{o.printKey, o.printOffset, o.printPartition, o.keySeparator}
	w := bufio.NewWriterSize(out, 64<<10)
	var n int64
	defer func() { fmt.Fprintf(errOut, "Processed a total of %d messages\n", n) }()
	idle := time.Duration(o.timeoutMs) * time.Millisecond
	for o.maxMessages == 0 || n < o.maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, idle)
		}
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if err := fetchError(fetches, errOut); err != nil {
			return err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if o.maxMessages == 0 || n < o.maxMessages {
				f.write(w, r)
				n++
				if counter != nil {
					counter.Count(r.Topic, r.Timestamp, 1, int64(len(r.Key)+len(r.Value)))
				}
			}
		})
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		if ctx.Err() != nil {
			return nil // interrupted: like the console consumer, not a failure
		}
		if pollCtx.Err() != nil && fetches.NumRecords() == 0 {
			return nil // --timeout-ms passed with nothing new
		}
	}
	return nil
}

// checkTopic asks the brokers for the topic, within --request-timeout, as
// topics list does: the consumer itself would wait for ever, silently, for
// brokers it cannot reach or a topic that does not exist.
func (o *consumeOptions) checkTopic(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	defer cancel()
	_, err := selectPartitions(ctx, kadm.NewClient(cl), o.topic, o.partition)
	return o.client.reachError(err)
}

// fetchError returns the first fetch error that should stop consuming.
// Context errors are how a poll ends on timeout or signal; data loss is
// reported but kgo has already resumed past it, as the console consumer
// does with auto.offset.reset.
func fetchError(fetches kgo.Fetches, errOut io.Writer) error {
	for _, fe := range fetches.Errors() {
		var loss *kgo.ErrDataLoss
		switch {
		case errors.Is(fe.Err, context.Canceled), errors.Is(fe.Err, context.DeadlineExceeded):
			continue
		case errors.As(fe.Err, &loss):
			fmt.Fprintf(errOut, "consume: %v\n", fe.Err)
			continue
		}
		return fmt.Errorf("fetch %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	return nil
}
