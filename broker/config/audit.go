package config

import (
	"fmt"
	"time"
)

// DefaultAuditTopicReplication is audit.topic.replication.factor's default,
// offsets.topic.replication.factor's.
const DefaultAuditTopicReplication = 3

// DefaultAuditTopicRetention is audit.topic.retention.ms's default. The
// audit topic holds events (counts per window), not state: it keeps the
// delete policy and ages out like any topic, long enough for the audit
// checker to compare every tier's windows after an outage of days.
const DefaultAuditTopicRetention = 7 * 24 * time.Hour

// Audit is how the broker creates the audit topic (broker.AuditTopic,
// audit.topic.*). Zero values mean the defaults.
type Audit struct {
	// Partitions is audit.topic.num.partitions; zero means num.partitions.
	Partitions int32
	// Replication is audit.topic.replication.factor (default 3), capped at
	// the live brokers when the topic is created.
	Replication int16
	// Retention is audit.topic.retention.ms, the topic's retention.ms when
	// the broker creates it (cleanup.policy=delete); zero means 7 days,
	// negative keeps it for ever.
	Retention time.Duration
}

// RetentionMs is the audit topic's retention.ms: -1 for ever.
func (a Audit) RetentionMs() int64 {
	switch {
	case a.Retention == 0:
		return DefaultAuditTopicRetention.Milliseconds()
	case a.Retention < 0:
		return -1
	}
	return a.Retention.Milliseconds()
}

// Validate names the invalid key.
func (a Audit) Validate() error {
	switch {
	case a.Partitions < 0:
		return fmt.Errorf("%w: audit.topic.num.partitions: must be >= 1, got %d", ErrInvalidConfig, a.Partitions)
	case a.Partitions > MaxPartitionsPerTopic:
		return fmt.Errorf("%w: audit.topic.num.partitions: must be <= %d, got %d", ErrInvalidConfig, MaxPartitionsPerTopic, a.Partitions)
	case a.Replication < 0:
		return fmt.Errorf("%w: audit.topic.replication.factor: must be >= 1, got %d", ErrInvalidConfig, a.Replication)
	}
	return nil
}

// auditPropertySetters are the audit topic's server.properties keys.
var auditPropertySetters = map[string]func(c *Config, v string) error{
	"audit.topic.num.partitions": func(c *Config, v string) error {
		return setPositiveInt32(&c.Audit.Partitions, v)
	},
	"audit.topic.replication.factor": func(c *Config, v string) error {
		return setReplicationFactor(&c.Audit.Replication, v)
	},
	"audit.topic.retention.ms": func(c *Config, v string) error {
		n, err := ParseLong(v, -1)
		if err != nil {
			return err
		}
		c.Audit.Retention = time.Duration(n) * time.Millisecond
		if n == -1 {
			c.Audit.Retention = -1
		}
		if n == 0 {
			return fmt.Errorf("must be positive or -1")
		}
		return nil
	},
}
