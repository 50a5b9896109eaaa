package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/network"
)

// Offset says where a group-less consumer starts in a partition.
type Offset struct {
	kind offsetKind
	at   int64
}

type offsetKind int

const (
	offsetExact offsetKind = iota
	offsetEarliest
	offsetLatest
	offsetTime
)

// AtOffset starts at offset n (an out-of-range n falls back to
// ConsumerConfig.ResetOffset).
func AtOffset(n int64) Offset { return Offset{kind: offsetExact, at: n} }

// Earliest starts at the partition's first offset.
func Earliest() Offset { return Offset{kind: offsetEarliest} }

// Latest starts at the partition's end: only new messages.
func Latest() Offset { return Offset{kind: offsetLatest} }

// AtTime starts at the first message whose timestamp is >= t.
func AtTime(t time.Time) Offset { return Offset{kind: offsetTime, at: t.UnixMilli()} }

func (o Offset) kgo() kgo.Offset {
	switch o.kind {
	case offsetEarliest:
		return kgo.NewOffset().AtStart()
	case offsetLatest:
		return kgo.NewOffset().AtEnd()
	case offsetTime:
		return kgo.NewOffset().AfterMilli(o.at)
	}
	return kgo.NewOffset().At(o.at)
}

// ConsumerConfig configures a group-less Consumer.
type ConsumerConfig struct {
	// Brokers is bootstrap.servers (required).
	Brokers []string
	// ClientID is client.id.
	ClientID string
	// Security secures the connections: security.protocol, the TLS
	// configuration and SASL credentials (see SecurityFromProperties).
	// The zero value is PLAINTEXT.
	Security Security
	// ResetOffset is where a partition goes when its offset is out of
	// range: "smallest"/"earliest" or "largest"/"latest" (default).
	ResetOffset string
	// FetchMaxWait is fetch.wait.max.ms; default DefaultFetchMaxWait.
	FetchMaxWait time.Duration
	// FetchMaxPartitionBytes is fetch.message.max.bytes.
	FetchMaxPartitionBytes int32
	// Logger receives client events; nil discards them.
	Logger *slog.Logger
}

// Validate checks the configuration.
func (c ConsumerConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, fmt.Errorf("%w: bootstrap.servers: at least one broker is required", ErrInvalidConfig))
	}
	if !validReset(c.ResetOffset) {
		errs = append(errs, fmt.Errorf("%w: reset offset %q is not smallest/earliest or largest/latest", ErrInvalidConfig, c.ResetOffset))
	}
	if c.FetchMaxWait < 0 || c.FetchMaxPartitionBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: negative fetch setting", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}

// Consumer reads given partitions from given offsets, with no group and no
// commits: the application tracks its position (Message.Offset). Poll
// and All must be called from one goroutine; Seek, Assign and Close from
// any.
type Consumer struct {
	cl  *kgo.Client
	adm *kadm.Client

	mu       sync.Mutex
	assigned map[string]map[int32]bool
}

// NewConsumer starts consuming partitions (topic -> partition -> start).
func NewConsumer(cfg ConsumerConfig, partitions map[string]map[int32]Offset) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reset := kgo.NewOffset().AtEnd()
	if (GroupConfig{AutoOffsetReset: cfg.ResetOffset}).resetSmallest() {
		reset = kgo.NewOffset().AtStart()
	}
	partBytes := cfg.FetchMaxPartitionBytes
	if partBytes == 0 {
		partBytes = DefaultFetchMaxPartitionSize
	}
	opts := []kgo.Opt{
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(orDuration(cfg.FetchMaxWait, DefaultFetchMaxWait)),
		kgo.FetchMaxPartitionBytes(partBytes),
	}
	c := &Consumer{assigned: map[string]map[int32]bool{}}
	if len(partitions) > 0 {
		opts = append(opts, kgo.ConsumePartitions(c.record(partitions)))
	}
	conn := network.ClientConfig{Brokers: cfg.Brokers, ClientID: cfg.ClientID, Logger: loggerOr(cfg.Logger)}.Secured(cfg.Security)
	cl, err := network.NewClient(conn, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: consumer: %w", err)
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	return c, nil
}

// record notes partitions as assigned and converts their offsets.
func (c *Consumer) record(partitions map[string]map[int32]Offset) map[string]map[int32]kgo.Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[int32]kgo.Offset{}
	for t, ps := range partitions {
		out[t] = map[int32]kgo.Offset{}
		if c.assigned[t] == nil {
			c.assigned[t] = map[int32]bool{}
		}
		for p, o := range ps {
			out[t][p] = o.kgo()
			c.assigned[t][p] = true
		}
	}
	return out
}

// Assign adds partitions (or restarts given ones at new offsets).
func (c *Consumer) Assign(partitions map[string]map[int32]Offset) {
	c.cl.AddConsumePartitions(c.record(partitions))
}

// Poll waits for messages (or ctx's end) and returns those fetched, in
// offset order per partition. Errors are per partition; messages come with
// them when some partitions succeeded.
func (c *Consumer) Poll(ctx context.Context) ([]*Message, error) {
	fs := c.cl.PollFetches(ctx)
	if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, ctx.Err()
	}
	var errs []error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, kgo.ErrClientClosed) {
			err = ErrClosed
		}
		errs = append(errs, fmt.Errorf("%s-%d: %w", t, p, err))
	})
	n := fs.NumRecords()
	backing := make([]Message, n)
	out := make([]*Message, 0, n)
	fs.EachRecord(func(r *kgo.Record) {
		out = append(out, messageFromRecord(&backing[len(out)], r))
	})
	return out, errors.Join(errs...)
}

// All yields messages until ctx ends or the consumer closes; an error is
// yielded as it comes and iteration goes on unless the body breaks.
func (c *Consumer) All(ctx context.Context) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) {
		for {
			msgs, err := c.Poll(ctx)
			for _, m := range msgs {
				if !yield(m, nil) {
					return
				}
			}
			if err != nil {
				if !yield(nil, err) || ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return
				}
			}
		}
	}
}

// Seek moves an assigned partition to offset. Messages already fetched
// from before the seek may still be returned by the next Poll.
func (c *Consumer) Seek(ctx context.Context, topic string, partition int32, offset int64) error {
	c.mu.Lock()
	ok := c.assigned[topic][partition]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s-%d", ErrNotOwned, topic, partition)
	}
	c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: offset}}})
	return nil
}

// SeekToTime moves an assigned partition to its first message with a
// timestamp >= t (its end when there is none), found with ListOffsets.
func (c *Consumer) SeekToTime(ctx context.Context, topic string, partition int32, t time.Time) error {
	off, err := offsetAtTime(ctx, c.adm, topic, partition, t)
	if err != nil {
		return err
	}
	return c.Seek(ctx, topic, partition, off)
}

// Close stops fetching and closes connections.
func (c *Consumer) Close() { c.cl.Close() }

// offsetAtTime is ListOffsets by timestamp for one partition; past the last
// message it is the end offset.
func offsetAtTime(ctx context.Context, adm *kadm.Client, topic string, partition int32, t time.Time) (int64, error) {
	listed, err := adm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topic)
	if err != nil {
		return 0, fmt.Errorf("client: listing offsets of %s at %v: %w", topic, t, err)
	}
	lo, ok := listed.Lookup(topic, partition)
	if !ok {
		return 0, fmt.Errorf("%w: %s-%d", ErrUnknownTopic, topic, partition)
	}
	if lo.Err != nil {
		return 0, fmt.Errorf("client: listing offset of %s-%d at %v: %w", topic, partition, t, lo.Err)
	}
	if lo.Offset < 0 {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		end, ok := ends.Lookup(topic, partition)
		if !ok || end.Err != nil {
			return 0, fmt.Errorf("client: listing end offset of %s-%d: %v", topic, partition, end.Err)
		}
		return end.Offset, nil
	}
	return lo.Offset, nil
}
