package group

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults, Kafka's own where Kafka has one.
const (
	DefaultOffsetsTopicPartitions   = 50
	DefaultOffsetsReplication       = 3
	DefaultMinSessionTimeout        = 6 * time.Second
	DefaultMaxSessionTimeout        = 30 * time.Minute
	DefaultInitialRebalanceDelay    = 3 * time.Second
	DefaultMaxGroupSize             = 1<<31 - 1
	DefaultOffsetMetadataMaxBytes   = 4096
	DefaultMaxAssignmentBytes       = 1048588
	DefaultRegistryWriteTimeout     = 5 * time.Second
	DefaultOffsetsRetention         = 7 * 24 * time.Hour // offsets.retention.minutes=10080, Kafka >= 2.0
	DefaultOffsetsRetentionCheck    = 10 * time.Minute   // offsets.retention.check.interval.ms=600000
	DefaultOffsetsTopicSegmentBytes = 100 << 20          // offsets.topic.segment.bytes
	DefaultConsumerSessionTimeout   = 45 * time.Second   // group.consumer.session.timeout.ms
	DefaultConsumerHeartbeat        = 5 * time.Second    // group.consumer.heartbeat.interval.ms
	newMemberJoinTimeout            = 5 * time.Minute
	defaultLoadBatchBytes           = 1 << 20
	groupOperationsAuthorizedOnAll  = 1<<3 | 1<<6 | 1<<8 // READ, DELETE, DESCRIBE (Kafka's AclOperation codes)
)

// Config is the coordinator's configuration. Zero values mean the
// defaults; field comments name the server.properties key.
type Config struct {
	// OffsetsTopicPartitions is offsets.topic.num.partitions: the
	// partitions of __consumer_offsets, fixed once the topic exists
	// (changing it moves every group's coordinator; Kafka forbids it too).
	OffsetsTopicPartitions int32
	// OffsetsReplication is offsets.topic.replication.factor, capped at
	// the number of live brokers when the topic is created.
	OffsetsReplication int16
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms:
	// joins asking for a session timeout outside them get
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members.
	// Negative means none.
	InitialRebalanceDelay time.Duration
	// MaxGroupSize is group.max.size.
	MaxGroupSize int32
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int32
	// OffsetsRetention is offsets.retention.minutes: an empty group's
	// offsets are deleted this long after it became empty, a standalone
	// consumer's (a group that never had members) this long after each
	// commit (see "Offset expiry" in doc.go).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheck is offsets.retention.check.interval.ms: how
	// often the broker calls ExpireOffsets.
	OffsetsRetentionCheck time.Duration
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes, the
	// segment.bytes the offsets topic is created with (the cleaner never
	// touches the active segment).
	OffsetsTopicSegmentBytes int32
	// MaxAssignmentBytes bounds the sum of the assignments a leader sends
	// in SyncGroup (Kafka bounds the group record holding them by
	// message.max.bytes); a larger one fails the rebalance.
	MaxAssignmentBytes int32
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a
	// consumer-protocol member without a heartbeat for this long is
	// removed (45 s).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms,
	// the interval members are told to heartbeat at (5 s); it must be
	// below the session timeout.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerAssignors is group.consumer.assignors: the server-side
	// assignors offered, the first the default (uniform, range).
	ConsumerAssignors []string
	// ConsumerMaxSize is group.consumer.max.size: members per consumer
	// group (GROUP_MAX_SIZE_REACHED beyond).
	ConsumerMaxSize int32
	// Logger may be nil.
	Logger *slog.Logger
	// Now may be nil (time.Now); tests replace it.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.OffsetsTopicPartitions == 0 {
		c.OffsetsTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if c.OffsetsReplication == 0 {
		c.OffsetsReplication = DefaultOffsetsReplication
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxGroupSize == 0 {
		c.MaxGroupSize = DefaultMaxGroupSize
	}
	if c.OffsetMetadataMaxBytes == 0 {
		c.OffsetMetadataMaxBytes = DefaultOffsetMetadataMaxBytes
	}
	if c.MaxAssignmentBytes == 0 {
		c.MaxAssignmentBytes = DefaultMaxAssignmentBytes
	}
	if c.OffsetsRetention == 0 {
		c.OffsetsRetention = DefaultOffsetsRetention
	}
	if c.OffsetsRetentionCheck == 0 {
		c.OffsetsRetentionCheck = DefaultOffsetsRetentionCheck
	}
	if c.OffsetsTopicSegmentBytes == 0 {
		c.OffsetsTopicSegmentBytes = DefaultOffsetsTopicSegmentBytes
	}
	if c.ConsumerSessionTimeout == 0 {
		c.ConsumerSessionTimeout = DefaultConsumerSessionTimeout
	}
	if c.ConsumerHeartbeatInterval == 0 {
		c.ConsumerHeartbeatInterval = DefaultConsumerHeartbeat
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{AssignorUniform, AssignorRange}
	}
	if c.ConsumerMaxSize == 0 {
		c.ConsumerMaxSize = DefaultMaxGroupSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate checks the configuration and names the offending key.
func (c Config) Validate() error {
	d := c.withDefaults()
	switch {
	case d.OffsetsTopicPartitions < 1:
		return fmt.Errorf("%w: offsets.topic.num.partitions: must be >= 1, got %d", ErrInvalidConfig, c.OffsetsTopicPartitions)
	case d.OffsetsReplication < 1:
		return fmt.Errorf("%w: offsets.topic.replication.factor: must be >= 1, got %d", ErrInvalidConfig, c.OffsetsReplication)
	case d.MinSessionTimeout < 0:
		return fmt.Errorf("%w: group.min.session.timeout.ms: must be positive", ErrInvalidConfig)
	case d.MaxSessionTimeout < d.MinSessionTimeout:
		return fmt.Errorf("%w: group.max.session.timeout.ms: must be >= group.min.session.timeout.ms", ErrInvalidConfig)
	case d.MaxGroupSize < 1:
		return fmt.Errorf("%w: group.max.size: must be >= 1, got %d", ErrInvalidConfig, c.MaxGroupSize)
	case d.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("%w: offset.metadata.max.bytes: must be >= 0", ErrInvalidConfig)
	case d.OffsetsRetention < 0:
		return fmt.Errorf("%w: offsets.retention.minutes: must be >= 1", ErrInvalidConfig)
	case d.OffsetsRetentionCheck < time.Millisecond:
		return fmt.Errorf("%w: offsets.retention.check.interval.ms: must be >= 1", ErrInvalidConfig)
	case d.OffsetsTopicSegmentBytes < 14:
		return fmt.Errorf("%w: offsets.topic.segment.bytes: must be >= 14, got %d", ErrInvalidConfig, c.OffsetsTopicSegmentBytes)
	case d.ConsumerSessionTimeout < 0 || d.ConsumerHeartbeatInterval <= 0:
		return fmt.Errorf("%w: group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms must be positive", ErrInvalidConfig)
	case d.ConsumerHeartbeatInterval >= d.ConsumerSessionTimeout:
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms", ErrInvalidConfig)
	case d.ConsumerMaxSize < 1:
		return fmt.Errorf("%w: group.consumer.max.size: must be >= 1, got %d", ErrInvalidConfig, c.ConsumerMaxSize)
	case d.MaxAssignmentBytes < 0:
		return fmt.Errorf("%w: group assignment bound must be >= 0", ErrInvalidConfig)
	}
	for _, a := range d.ConsumerAssignors {
		if _, ok := assignors[a]; !ok {
			return fmt.Errorf("%w: group.consumer.assignors: unknown assignor %q (known: uniform, range)", ErrInvalidConfig, a)
		}
	}
	return nil
}
