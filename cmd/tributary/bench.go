package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchMode selects what a bench run measures.
type benchMode int

const (
	benchProduce benchMode = iota
	benchConsume
	benchE2E
)

// sendTimeBytes is how many leading value bytes an e2e record spends on its
// send time (big-endian Unix nanoseconds).
const sendTimeBytes = 8

// benchOptions are the flags of the bench subcommands. Each subcommand
// registers the subset it uses.
type benchOptions struct {
	mode       benchMode
	client     clientOptions
	producer   producerFlags
	topic      string
	records    int64
	recordSize int
	partitions int32
	// partitionsSet is whether --partitions was given, so that only an
	// explicit count that differs from an existing topic's gets a warning.
	partitionsSet bool
	throughput    float64
	timeoutMs     int64
	// transactionalID and txnRecords make bench produce transactional:
	// txnRecords records per transaction, each committed (Kafka's
	// transactional.id; ProducerPerformance's --transactional-id).
	transactionalID string
	txnRecords      int64
	// isolation is the consumer's isolation.level.
	isolation string
}

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce, consume and end-to-end throughput and latency",
		Long: "bench runs one producer, one consumer or both against a topic (created with\n" +
			"--partitions if missing) and prints results in the shape of Kafka's\n" +
			"kafka-producer-perf-test and kafka-consumer-perf-test.",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		newBenchModeCommand(benchProduce, "produce",
			"Produce --records records as fast as possible (or at --throughput) and report ack latency"),
		newBenchModeCommand(benchConsume, "consume",
			"Consume --records records from the start of every partition and report throughput"),
		newBenchModeCommand(benchE2E, "e2e",
			"Produce and consume at once and report end-to-end latency (send to receive)"),
	)
	return cmd
}

func newBenchModeCommand(mode benchMode, use, short string) *cobra.Command {
	o := &benchOptions{mode: mode}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.partitionsSet = cmd.Flags().Changed("partitions")
			ctx, cancel := signalContext(cmd)
			defer cancel()
			return o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *benchOptions) addFlags(fs *pflag.FlagSet) {
	o.client.addFlags(fs)
	fs.StringVar(&o.topic, "topic", "", "topic to use; created with --partitions if missing (required)")
	fs.Int64Var(&o.records, "records", 0, "number of records to produce or consume (required)")
	fs.IntVar(&o.recordSize, "record-size", 100, "value size in bytes")
	fs.Int32Var(&o.partitions, "partitions", 1, "partitions of the topic if it has to be created")
	if o.mode != benchConsume {
		o.producer.addFlags(fs, "1")
		fs.Float64Var(&o.throughput, "throughput", -1, "records per second to aim for (-1: as fast as possible)")
	}
	if o.mode == benchProduce {
		fs.StringVar(&o.transactionalID, "transactional-id", "",
			"produce in transactions with this transactional.id, committing every --txn-records records")
		fs.Int64Var(&o.txnRecords, "txn-records", 1000, "records per transaction with --transactional-id")
	}
	if o.mode != benchProduce {
		fs.Int64Var(&o.timeoutMs, "timeout-ms", 10000, "give up when no record arrives for this long")
		fs.StringVar(&o.isolation, "isolation-level", "read_uncommitted",
			"the consumer's isolation.level: read_uncommitted or read_committed")
	}
}

// isolationLevel maps --isolation-level to kgo's option.
func (o *benchOptions) isolationLevel() (kgo.IsolationLevel, error) {
	switch o.isolation {
	case "read_uncommitted", "":
		return kgo.ReadUncommitted(), nil
	case "read_committed":
		return kgo.ReadCommitted(), nil
	}
	return kgo.IsolationLevel{}, badFlag("isolation-level", o.isolation, "want read_uncommitted or read_committed")
}

func (o *benchOptions) validate() error {
	if err := o.client.validate(); err != nil {
		return err
	}
	if err := checkTopicName(o.topic); err != nil {
		return err
	}
	if o.records < 1 {
		return badFlag("records", strconv.FormatInt(o.records, 10), "must be at least 1")
	}
	minSize := 1
	if o.mode == benchE2E {
		minSize = sendTimeBytes
	}
	if o.recordSize < minSize {
		return badFlag("record-size", strconv.Itoa(o.recordSize), fmt.Sprintf("must be at least %d", minSize))
	}
	if o.partitions < 1 {
		return badFlag("partitions", strconv.Itoa(int(o.partitions)), "must be at least 1")
	}
	if o.mode != benchConsume {
		if err := o.producer.validate(); err != nil {
			return err
		}
		if o.throughput == 0 || o.throughput < -1 {
			return badFlag("throughput", strconv.FormatFloat(o.throughput, 'g', -1, 64), "want > 0, or -1 for no limit")
		}
	}
	if o.mode == benchProduce && o.transactionalID != "" {
		if o.txnRecords < 1 {
			return badFlag("txn-records", strconv.FormatInt(o.txnRecords, 10), "must be at least 1")
		}
		if a, _ := parseAcks(o.producer.acks); a != kgo.AllISRAcks() {
			return badFlag("acks", o.producer.acks, "a transactional producer needs -1 (all)")
		}
		if o.producer.disableIdemp {
			return badFlag("no-idempotence", "true", "a transactional producer is idempotent")
		}
	}
	if o.mode != benchProduce {
		if o.timeoutMs < 1 {
			return badFlag("timeout-ms", strconv.FormatInt(o.timeoutMs, 10), "must be at least 1")
		}
		if _, err := o.isolationLevel(); err != nil {
			return err
		}
	}
	return nil
}

func (o *benchOptions) run(ctx context.Context, out, errOut io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	adm, err := o.client.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	setupCtx, cancel := context.WithTimeout(ctx, o.client.requestTimeout)
	n, err := ensureTopic(setupCtx, adm, o.topic, o.partitions)
	cancel()
	if err != nil {
		return err
	}
	if n != o.partitions && o.partitionsSet {
		fmt.Fprintf(errOut, "bench: topic %s already exists with %d partitions; using them (--partitions %d ignored)\n",
			o.topic, n, o.partitions)
	}
	switch o.mode {
	case benchProduce:
		return o.runProduce(ctx, out)
	case benchConsume:
		return o.runConsume(ctx, adm, out)
	default:
		return o.runE2E(ctx, adm, out)
	}
}

// newPayload returns record-size bytes of random upper-case letters, as
// kafka-producer-perf-test uses, so that compressed runs compare fairly.
func newPayload(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('A' + rng.IntN(26))
	}
	return b
}

// throttler paces a producer to a target rate. It sleeps only when ahead by
// more than a millisecond, since timer granularity makes shorter sleeps
// overshoot.
type throttler struct {
	perSec float64
	start  time.Time
}

func (t throttler) wait(ctx context.Context, sent int64) {
	if t.perSec <= 0 {
		return
	}
	due := t.start.Add(time.Duration(float64(sent) / t.perSec * float64(time.Second)))
	if ahead := time.Until(due); ahead > time.Millisecond {
		timer := time.NewTimer(ahead)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
}
