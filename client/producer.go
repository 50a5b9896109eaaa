package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
)

// Producer sends messages to a cluster through one franz-go client, which
// batches per partition (linger, batch size), retries and, by default,
// writes idempotently. A Producer is safe for concurrent use.
type Producer struct {
	cfg ProducerConfig
	cl  *kgo.Client

	// auditCl publishes audit events: a client of its own, so that the
	// user's partitioner and buffer never apply to the audit topic.
	auditCl *kgo.Client
	counter *audit.Counter // nil when audit is disabled

	closeOnce sync.Once
	closeErr  error
}

// NewProducer validates cfg and returns a producer. It does not contact the
// cluster; the first Send does.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.RecordPartitioner(kgoPartitioner(cfg.partitioner())),
		kgo.ProducerLinger(cfg.linger()),
		kgo.ProducerBatchMaxBytes(cfg.batchBytes()),
		kgo.RecordDeliveryTimeout(cfg.deliveryTimeout()),
		kgo.ProducerBatchCompression(cfg.codec()),
	}
	if cfg.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(cfg.MaxBufferedRecords))
	}
	switch cfg.acks() {
	case AcksNone:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case AcksLeader:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !cfg.Idempotent() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := network.NewClient(cfg.connection(""), opts...)
	if err != nil {
		return nil, fmt.Errorf("client: producer: %w", err)
	}
	p := &Producer{cfg: cfg, cl: cl}
	if !cfg.Audit.Disable {
		if err := p.startAudit(); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return p, nil
}

// connection is how the producer's clients connect; suffix marks the
// client.id of a second client (the audit counter's).
func (cfg ProducerConfig) connection(suffix string) network.ClientConfig {
	c := network.ClientConfig{Brokers: cfg.Brokers, Logger: loggerOr(cfg.Logger)}.Secured(cfg.Security)
	if cfg.ClientID != "" {
		c.ClientID = cfg.ClientID + suffix
	}
	return c
}

func (p *Producer) startAudit() error {
	acl, err := network.NewClient(p.cfg.connection("-audit"), kgo.RecordDeliveryTimeout(p.cfg.deliveryTimeout()))
	if err != nil {
		return fmt.Errorf("client: producer audit: %w", err)
	}
	acfg := p.cfg.auditConfig()
	acfg.Logger = loggerOr(p.cfg.Logger)
	counter, err := audit.NewCounter(acfg, audit.NewKafkaPublisher(acl, acfg.Topic))
	if err != nil {
		acl.Close()
		return fmt.Errorf("client: producer audit: %w", err)
	}
	p.auditCl, p.counter = acl, counter
	return nil
}

func (c ProducerConfig) partitioner() Partitioner {
	if c.Partitioner != nil {
		return c.Partitioner
	}
	return HashPartitioner()
}

func (c ProducerConfig) linger() time.Duration {
	switch {
	case c.Linger < 0:
		return 0
	case c.Linger == 0:
		return DefaultLinger
	}
	return c.Linger
}

func (c ProducerConfig) batchBytes() int32 {
	if c.BatchBytes > 0 {
		return c.BatchBytes
	}
	return DefaultBatchBytes
}

func (c ProducerConfig) deliveryTimeout() time.Duration {
	if c.DeliveryTimeout > 0 {
		return c.DeliveryTimeout
	}
	return DefaultDeliveryTimeout
}

func (c ProducerConfig) codec() kgo.CompressionCodec {
	codec, _ := network.Compression(c.Compression) // Validate refused unknown names
	return codec
}

// Send produces m and waits for its acknowledgement (with acks=0, for the
// request to be written). On success m's Partition, Offset (-1 with acks=0)
// and Timestamp are filled in. Cancelling ctx abandons records not yet
// sent; one already sent may still be written.
func (p *Producer) Send(ctx context.Context, m *Message) error {
	f := p.SendFuture(ctx, m)
	return f.Wait(ctx)
}

// SendAsync buffers m and returns; done is called once, from a producer
// goroutine, with m (its Partition, Offset and Timestamp filled in on
// success) and the outcome. Callbacks for one partition run in send order.
// SendAsync blocks while the producer's buffer is full, until ctx ends (then
// done gets ctx's error). done must not block for long: it holds up the
// callbacks behind it.
func (p *Producer) SendAsync(ctx context.Context, m *Message, done func(*Message, error)) {
	p.cl.Produce(ctx, m.toRecord(), func(r *kgo.Record, err error) {
		if err == nil {
			m.fillFromRecord(r)
			if p.counter != nil {
				// Only acknowledged records count: the producer tier is
				// what the cluster has.
				p.counter.Count(r.Topic, r.Timestamp, 1, int64(len(r.Key)+len(r.Value)))
			}
		} else {
			err = classifyProduceError(err)
		}
		if done != nil {
			done(m, err)
		}
	})
}

// Future is the pending outcome of SendFuture.
type Future struct {
	done chan struct{}
	msg  *Message
	err  error
}

// SendFuture is SendAsync returning a Future instead of taking a callback.
func (p *Producer) SendFuture(ctx context.Context, m *Message) *Future {
	f := &Future{done: make(chan struct{}), msg: m}
	p.SendAsync(ctx, m, func(_ *Message, err error) {
		f.err = err
		close(f.done)
	})
	return f
}

// Wait blocks until the send completes or ctx ends, and returns the send's
// error (or ctx's, leaving the send pending).
func (f *Future) Wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed when the send has completed.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result returns the message and outcome; only meaningful after Done.
func (f *Future) Result() (*Message, error) {
	select {
	case <-f.done:
		return f.msg, f.err
	default:
		return f.msg, fmt.Errorf("client: send still pending")
	}
}

// Flush sends everything buffered and waits for every outstanding
// acknowledgement, or until ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	return p.cl.Flush(ctx)
}

// FlushAudit publishes the audit counts of everything acknowledged so far
// (a no-op with audit disabled).
func (p *Producer) FlushAudit(ctx context.Context) error {
	if p.counter == nil {
		return nil
	}
	return p.counter.Flush(ctx)
}

// Close flushes (bounded by ctx), publishes the last audit counts and
// closes the producer. Records still unsent when ctx ends fail with
// ErrClosed-wrapped errors in their callbacks. Close is idempotent.
func (p *Producer) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		var errs []error
		if err := p.cl.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("client: producer close: flush: %w", err))
		}
		if p.counter != nil {
			// After the flush every acknowledgement has been counted.
			if err := p.counter.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("client: producer close: audit: %w", err))
			}
			p.auditCl.Close()
		}
		p.cl.Close()
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// classifyProduceError marks errors that have a sentinel here.
func classifyProduceError(err error) error {
	switch {
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case strings.Contains(err.Error(), "invalid record partitioning choice"):
		// franz-go reports an out-of-range partitioner choice as a plain error.
		return fmt.Errorf("%w: %w", ErrBadPartition, err)
	}
	return err
}
