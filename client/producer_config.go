package client

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
)

// Acks is the producer's acks setting: how many replicas must have the
// record before the broker answers.
type Acks int

const (
	// AcksDefault means AcksAll.
	AcksDefault Acks = iota
	// AcksNone is acks=0: the broker does not answer; offsets are unknown.
	AcksNone
	// AcksLeader is acks=1: the leader has written the record.
	AcksLeader
	// AcksAll is acks=all (-1): every in-sync replica has it.
	AcksAll
)

// Producer defaults.
const (
	// DefaultLinger is linger.ms's default here (franz-go's default: a short
	// linger costs little latency and makes much bigger batches).
	DefaultLinger = 10 * time.Millisecond
	// DefaultBatchBytes is batch.size's default: franz-go's maximum batch
	// size, Kafka's message.max.bytes default.
	DefaultBatchBytes = 1000012
	// DefaultDeliveryTimeout is delivery.timeout.ms's default.
	DefaultDeliveryTimeout = 2 * time.Minute
)

// ProducerConfig configures a Producer. Zero values mean defaults; the
// comments name the Kafka producer property each field stands for.
type ProducerConfig struct {
	// Brokers is bootstrap.servers: host:port seeds (required).
	Brokers []string
	// ClientID is client.id.
	ClientID string
	// Security secures the connections: security.protocol, the TLS
	// configuration and SASL credentials (see SecurityFromProperties).
	// The zero value is PLAINTEXT.
	Security Security
	// Acks is acks; default all.
	Acks Acks
	// Linger is linger.ms: how long a partition's batch waits for more
	// records. Default DefaultLinger; negative means send at once.
	Linger time.Duration
	// BatchBytes is batch.size: the largest batch, in bytes. Default
	// DefaultBatchBytes.
	BatchBytes int32
	// DisableIdempotence is enable.idempotence=false. Idempotence is on by
	// default with acks=all; it needs acks=all, so with acks 0 or 1 it is
	// off (as the Java client does when it is not set explicitly).
	DisableIdempotence bool
	// Partitioner chooses partitions; default HashPartitioner (Java's
	// murmur2 for keys, round-robin without).
	Partitioner Partitioner
	// Compression is compression.type: "none" (default), "gzip",
	// "snappy", "lz4" or "zstd".
	Compression string
	// DeliveryTimeout is delivery.timeout.ms: how long a record may wait
	// for its ack, retries included. Default DefaultDeliveryTimeout.
	DeliveryTimeout time.Duration
	// MaxBufferedRecords bounds records waiting to be sent (buffer.memory in
	// records); a full buffer blocks SendAsync. Default franz-go's (10,000).
	MaxBufferedRecords int
	// Logger receives client events; nil discards them.
	Logger *slog.Logger
	// Audit configures the producer's audit counter (the "producer" tier):
	// on by default.
	Audit ProducerAudit
}

// ProducerAudit configures the audit counter of a Producer: it counts
// acknowledged records per topic and window of their timestamps and
// publishes the counts to the audit topic of the cluster it produces to
// (see package audit). Zero values mean defaults.
type ProducerAudit struct {
	// Disable is audit.enable=false: count nothing, publish nothing.
	Disable bool
	// Cluster is audit.cluster: the name of the cluster produced to, as
	// the audit report shows it. Default: the bootstrap servers joined by
	// commas.
	Cluster string
	// Window is audit.window.ms; default audit.DefaultWindow.
	Window time.Duration
	// Interval is audit.interval.ms, how often counts are published;
	// default audit.DefaultInterval.
	Interval time.Duration
	// Topic is audit.topic; default audit.DefaultTopic.
	Topic string
	// Instance names this process in audit events; default "host:pid".
	Instance string
	// Registerer receives the audit counter's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Validate checks the configuration.
func (c ProducerConfig) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, fmt.Errorf("%w: bootstrap.servers: at least one broker is required", ErrInvalidConfig))
	}
	if c.Acks < AcksDefault || c.Acks > AcksAll {
		errs = append(errs, fmt.Errorf("%w: acks: unknown value %d", ErrInvalidConfig, c.Acks))
	}
	if c.BatchBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: batch.size: must be >= 0", ErrInvalidConfig))
	}
	if c.DeliveryTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: delivery.timeout.ms: must be >= 0", ErrInvalidConfig))
	}
	if c.MaxBufferedRecords < 0 {
		errs = append(errs, fmt.Errorf("%w: max buffered records: must be >= 0", ErrInvalidConfig))
	}
	if _, ok := network.Compression(c.Compression); !ok {
		errs = append(errs, fmt.Errorf("%w: compression.type: unknown codec %q", ErrInvalidConfig, c.Compression))
	}
	if !c.Audit.Disable {
		if err := c.auditConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidConfig, err))
		}
	}
	return errors.Join(errs...)
}

// auditConfig is the audit.Config of the producer tier.
func (c ProducerConfig) auditConfig() audit.Config {
	cluster := c.Audit.Cluster
	if cluster == "" {
		cluster = strings.Join(c.Brokers, ",")
	}
	return audit.Config{
		Tier:       audit.TierProducer,
		Cluster:    cluster,
		Instance:   c.Audit.Instance,
		Window:     c.Audit.Window,
		Interval:   c.Audit.Interval,
		Topic:      c.Audit.Topic,
		Logger:     c.Logger,
		Registerer: c.Audit.Registerer,
	}
}

func (c ProducerConfig) acks() Acks {
	if c.Acks == AcksDefault {
		return AcksAll
	}
	return c.Acks
}

// Idempotent reports whether the producer will write idempotently.
func (c ProducerConfig) Idempotent() bool { return !c.DisableIdempotence && c.acks() == AcksAll }

func loggerOr(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
