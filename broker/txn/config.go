package txn

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults, Kafka's own.
const (
	DefaultStatePartitions       = 50                 // transaction.state.log.num.partitions
	DefaultStateReplication      = 3                  // transaction.state.log.replication.factor
	DefaultStateMinISR           = 2                  // transaction.state.log.min.isr
	DefaultStateSegmentBytes     = 100 << 20          // transaction.state.log.segment.bytes
	DefaultMaxTimeout            = 15 * time.Minute   // transaction.max.timeout.ms
	DefaultIDExpiration          = 7 * 24 * time.Hour // transactional.id.expiration.ms
	DefaultAbortCheckInterval    = 10 * time.Second   // transaction.abort.timed.out.transaction.cleanup.interval.ms
	DefaultRemoveExpiredInterval = time.Hour          // transaction.remove.expired.transaction.cleanup.interval.ms
	markerRetryBackoff           = 100 * time.Millisecond
	maxMarkerRetryBackoff        = 2 * time.Second
)

// Config is the coordinator's configuration. Zero values mean the
// defaults; field comments name the server.properties key.
type Config struct {
	// StatePartitions is transaction.state.log.num.partitions, fixed once
	// the state topic exists.
	StatePartitions int32
	// StateReplication is transaction.state.log.replication.factor,
	// capped at the live brokers when the topic is created.
	StateReplication int16
	// StateMinISR is transaction.state.log.min.isr, the topic's
	// min.insync.replicas (capped at its replication factor).
	StateMinISR int32
	// StateSegmentBytes is transaction.state.log.segment.bytes.
	StateSegmentBytes int32
	// MaxTimeout is transaction.max.timeout.ms: an InitProducerId asking
	// for a longer transaction.timeout.ms gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: a transactional id
	// without a transaction for this long is removed.
	IDExpiration time.Duration
	// AbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how
	// often the broker calls AbortTimedOut.
	AbortCheckInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms: how often
	// the broker calls RemoveExpired.
	RemoveExpiredInterval time.Duration
	// Logger may be nil.
	Logger *slog.Logger
	// Now may be nil (time.Now); tests replace it.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.StatePartitions == 0 {
		c.StatePartitions = DefaultStatePartitions
	}
	if c.StateReplication == 0 {
		c.StateReplication = DefaultStateReplication
	}
	if c.StateMinISR == 0 {
		c.StateMinISR = DefaultStateMinISR
	}
	if c.StateSegmentBytes == 0 {
		c.StateSegmentBytes = DefaultStateSegmentBytes
	}
	def(&c.MaxTimeout, DefaultMaxTimeout)
	def(&c.IDExpiration, DefaultIDExpiration)
	def(&c.AbortCheckInterval, DefaultAbortCheckInterval)
	def(&c.RemoveExpiredInterval, DefaultRemoveExpiredInterval)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate rejects negative settings, naming the key.
func (c Config) Validate() error {
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"transaction.max.timeout.ms", c.MaxTimeout},
		{"transactional.id.expiration.ms", c.IDExpiration},
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", c.AbortCheckInterval},
		{"transaction.remove.expired.transaction.cleanup.interval.ms", c.RemoveExpiredInterval},
	} {
		if d.v < 0 {
			return fmt.Errorf("txn: %s must be positive, got %v", d.key, d.v)
		}
	}
	if c.StatePartitions < 0 || c.StateReplication < 0 || c.StateMinISR < 0 || c.StateSegmentBytes < 0 {
		return fmt.Errorf("txn: transaction.state.log.* settings must be positive")
	}
	return nil
}
