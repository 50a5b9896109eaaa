package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/client"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/pipeline/pageview"
)

// DefaultTopic is the page-view topic.
const DefaultTopic = pageview.Topic

// ProducerConfig configures a page-view producer.
type ProducerConfig struct {
	// Brokers are the datacenter cluster's bootstrap addresses. Required.
	Brokers []string
	// Security secures the connections to Brokers; the zero value is
	// PLAINTEXT.
	Security client.Security
	// RegistryURL is the schema registry. Required.
	RegistryURL string
	// Registry holds the registry client's credentials and TLS (see
	// serde.ClientConfigFromProperties); its URL is RegistryURL's.
	Registry serde.ClientConfig
	// Datacenter names the cluster, e.g. "dc1". Required.
	Datacenter string
	// Producer is the run id; default NewProducerID(Datacenter).
	Producer string
	// Topic defaults to DefaultTopic.
	Topic string
	// Rate is records per second; default 50.
	Rate float64
	// Count stops after this many records; 0 means until ctx ends.
	Count int64
	// Audit configures the client's producer-tier audit counter, which
	// publishes to the datacenter's own audit topic (the mirror carries it
	// to analytics). Audit.Cluster defaults to Datacenter.
	Audit client.ProducerAudit
	// Logger; nil discards.
	Logger *slog.Logger
}

// Validate checks the configuration.
func (c ProducerConfig) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: producer: Brokers is required", ErrInvalidConfig)
	case c.RegistryURL == "":
		return fmt.Errorf("%w: producer: RegistryURL is required", ErrInvalidConfig)
	case c.Datacenter == "":
		return fmt.Errorf("%w: producer: Datacenter is required", ErrInvalidConfig)
	case c.Rate < 0:
		return fmt.Errorf("%w: producer: Rate %v must be >= 0", ErrInvalidConfig, c.Rate)
	case c.Count < 0:
		return fmt.Errorf("%w: producer: Count %d must be >= 0", ErrInvalidConfig, c.Count)
	}
	return nil
}

// ProducerStats is what a producer run did.
type ProducerStats struct {
	Producer string
	Sent     int64 // records handed to the client
	Acked    int64 // records acknowledged: seq 0..Acked-1 when Failed is 0
	Failed   int64 // records whose send failed for good
	// FailedSeqs are the seqs of the failed records: each may or may not
	// have been written (a timed-out send can still land).
	FailedSeqs []int64
}

// Producer sends page views at a steady rate.
type Producer struct {
	cfg    ProducerConfig
	p      *client.Producer
	ser    *serde.Serializer
	logger *slog.Logger

	sent, acked, failed atomic.Int64

	mu         sync.Mutex
	err        error // the first send error
	failedSeqs []int64
}

// NewProducer validates cfg and connects.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Producer == "" {
		cfg.Producer = pageview.NewProducerID(cfg.Datacenter)
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Rate == 0 {
		cfg.Rate = 50
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rc := cfg.Registry
	rc.URL = cfg.RegistryURL
	reg, err := serde.NewRegistryClient(rc)
	if err != nil {
		return nil, err
	}
	// acks=all and idempotence: a retried batch is never written twice,
	// so the producer tier's count is the truth the others are held to.
	if cfg.Audit.Cluster == "" {
		cfg.Audit.Cluster = cfg.Datacenter
	}
	if cfg.Audit.Instance == "" {
		cfg.Audit.Instance = cfg.Producer
	}
	p, err := client.NewProducer(client.ProducerConfig{Brokers: cfg.Brokers, Security: cfg.Security, ClientID: cfg.Producer, Logger: logger, Audit: cfg.Audit})
	if err != nil {
		return nil, err
	}
	return &Producer{cfg: cfg, p: p, ser: serde.NewSerializer(reg, serde.SerializerConfig{}), logger: logger}, nil
}

// ID returns the producer run id.
func (p *Producer) ID() string { return p.cfg.Producer }

// Stats returns the counts so far.
func (p *Producer) Stats() ProducerStats {
	p.mu.Lock()
	failed := slices.Clone(p.failedSeqs)
	p.mu.Unlock()
	return ProducerStats{Producer: p.cfg.Producer, Sent: p.sent.Load(), Acked: p.acked.Load(), Failed: p.failed.Load(), FailedSeqs: failed}
}

// Run sends until Count records were sent or ctx ends, then waits (up to
// drain) for every acknowledgement and closes the producer. It returns the
// first send error, if any.
func (p *Producer) Run(ctx context.Context, drain time.Duration) (ProducerStats, error) {
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		if err := p.p.Close(cctx); err != nil {
			p.setErr(err)
		}
	}()
	// Sends in small bursts every tick: steady enough for windows, cheap
	// at thousands of records per second.
	const tick = 20 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	start := time.Now()
	var seq int64
	for p.cfg.Count == 0 || seq < p.cfg.Count {
		due := int64(time.Since(start).Seconds() * p.cfg.Rate)
		if p.cfg.Count > 0 {
			due = min(due, p.cfg.Count)
		}
		for ; seq < due; seq++ {
			if err := p.send(ctx, seq); err != nil {
				if ctx.Err() != nil {
					return p.finish(drain)
				}
				p.setErr(err)
				return p.finish(drain)
			}
		}
		if p.cfg.Count > 0 && seq >= p.cfg.Count {
			break
		}
		select {
		case <-ctx.Done():
			return p.finish(drain)
		case <-t.C:
		}
	}
	return p.finish(drain)
}

// finish waits for the outstanding acknowledgements.
func (p *Producer) finish(drain time.Duration) (ProducerStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := p.p.Flush(ctx); err != nil {
		p.setErr(fmt.Errorf("flush: %w", err))
	}
	st := p.Stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	return st, p.err
}

func (p *Producer) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *Producer) send(ctx context.Context, seq int64) error {
	ts := time.Now()
	v := pageview.Event(p.cfg.Datacenter, p.cfg.Producer, seq, ts)
	val, err := p.ser.EncodeTopic(ctx, p.cfg.Topic, pageview.Schema, v)
	if err != nil {
		return err
	}
	m := &client.Message{
		Topic:     p.cfg.Topic,
		Key:       []byte(v["user"].(string)),
		Value:     val,
		Timestamp: v["timestamp"].(time.Time),
	}
	p.sent.Add(1)
	// The send's own context is not ctx: once handed over, a record is
	// either acknowledged or failed, never abandoned by a stop.
	p.p.SendAsync(context.WithoutCancel(ctx), m, func(m *client.Message, err error) {
		if err != nil {
			p.failed.Add(1)
			p.mu.Lock()
			p.failedSeqs = append(p.failedSeqs, seq)
			p.mu.Unlock()
			if !errors.Is(err, client.ErrClosed) {
				p.setErr(fmt.Errorf("page view %s/%d: %w", p.cfg.Producer, seq, err))
			}
			return
		}
		p.acked.Add(1)
	})
	return nil
}
