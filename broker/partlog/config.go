package partlog

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults, as in Kafka's broker configuration.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 168 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultRetentionMs        = 168 * time.Hour
	// DefaultProducerIDExpiration is Kafka's producer.id.expiration.ms default (1 day).
	DefaultProducerIDExpiration = 24 * time.Hour
	// DefaultMinCleanableDirtyRatio is min.cleanable.dirty.ratio's default.
	DefaultMinCleanableDirtyRatio = 0.5
	// DefaultDeleteRetention is delete.retention.ms's default (1 day).
	DefaultDeleteRetention = 24 * time.Hour
)

// Config configures one Log. Zero values mean the Kafka defaults.
type Config struct {
	SegmentBytes          int64         // log.segment.bytes; 0 = 1 GiB
	SegmentMs             time.Duration // log.roll.ms; 0 = 168h
	IndexIntervalBytes    int           // log.index.interval.bytes; 0 = 4096
	FlushIntervalMessages int64         // log.flush.interval.messages; 0 = never by count
	FlushInterval         time.Duration // log.flush.interval.ms; 0 = never by time (fsync on roll/close still)
	RetentionMs           time.Duration // log.retention.ms; 0 = 168h; negative = unlimited
	RetentionBytes        int64         // log.retention.bytes; 0 or negative = unlimited
	ProducerIDExpiration  time.Duration // producer.id.expiration.ms; 0 = 24h; negative = never (see "Idempotent producers" in doc.go)
	// Compaction (cleaner.go): Compact is cleanup.policy containing
	// "compact"; the log is then cleaned by Clean. Retention still applies
	// as configured (a "compact"-only topic sets both retentions to -1).
	Compact                bool
	MinCleanableDirtyRatio float64          // min.cleanable.dirty.ratio; 0 = 0.5; use a tiny positive value for Kafka's 0
	MinCompactionLag       time.Duration    // min.compaction.lag.ms; 0 = none
	MaxCompactionLag       time.Duration    // max.compaction.lag.ms; 0 or negative = unlimited
	DeleteRetention        time.Duration    // delete.retention.ms: how long tombstones stay once cleaned; 0 = 24h; negative = 0 (Kafka's 0)
	Files                  *FileCache       // open segment files, shared by the Logs of a process; nil = a private cache of DefaultMaxOpenFiles
	Logger                 *slog.Logger     // nil = slog.Default()
	Now                    func() time.Time // nil = time.Now; for tests
}

// Validate reports fields that are out of range. Zero values are valid (they
// mean defaults).
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < 0 || c.SegmentBytes > math.MaxInt32:
		// Positions in the .index are uint32 and one batch may overshoot a
		// segment by up to its own size (< 2 GiB), so 2 GiB is the ceiling, as in Kafka.
		return fmt.Errorf("%w: SegmentBytes %d not in [0, %d]", ErrInvalidConfig, c.SegmentBytes, math.MaxInt32)
	case c.SegmentMs < 0:
		return fmt.Errorf("%w: SegmentMs %v is negative", ErrInvalidConfig, c.SegmentMs)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: IndexIntervalBytes %d is negative", ErrInvalidConfig, c.IndexIntervalBytes)
	case c.FlushIntervalMessages < 0:
		return fmt.Errorf("%w: FlushIntervalMessages %d is negative", ErrInvalidConfig, c.FlushIntervalMessages)
	case c.FlushInterval < 0:
		return fmt.Errorf("%w: FlushInterval %v is negative", ErrInvalidConfig, c.FlushInterval)
	case c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1:
		return fmt.Errorf("%w: MinCleanableDirtyRatio %v not in [0, 1]", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case c.MinCompactionLag < 0:
		return fmt.Errorf("%w: MinCompactionLag %v is negative", ErrInvalidConfig, c.MinCompactionLag)
	}
	return nil
}

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.ProducerIDExpiration == 0 {
		c.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableDirtyRatio
	}
	if c.DeleteRetention == 0 {
		c.DeleteRetention = DefaultDeleteRetention
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// producerExpireMs is ProducerIDExpiration in whole milliseconds, rounded
// up so that a tiny positive value does not mean "expire at once"; -1 means
// never. c must have its defaults applied.
func (c Config) producerExpireMs() int64 {
	if c.ProducerIDExpiration < 0 {
		return -1
	}
	return int64((c.ProducerIDExpiration + time.Millisecond - 1) / time.Millisecond)
}
