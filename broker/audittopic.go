package broker

import (
	"fmt"
	"strconv"
	"time"
)

// AuditTopic is the audit topic, audit.DefaultTopic: the counts every
// tier of the pipeline publishes (package audit). The broker creates it,
// when its creator leaves the layout to the broker (auto-creation, or
// CreateTopics with -1), the way Kafka creates its internal topics:
// audit.topic.num.partitions partitions and audit.topic.replication.factor
// replicas capped at the live brokers, so that one dead broker leaves every
// audit partition a leader. An audit topic configured under another name is
// an ordinary topic.
const AuditTopic = "__audit"

// DefaultAuditTopicReplication is audit.topic.replication.factor's default,
// offsets.topic.replication.factor's.
const DefaultAuditTopicReplication = 3

// DefaultAuditTopicRetention is audit.topic.retention.ms's default. The
// audit topic holds events (counts per window), not state: it keeps the
// delete policy and ages out like any topic, long enough for the audit
// checker to compare every tier's windows after an outage of days.
const DefaultAuditTopicRetention = 7 * 24 * time.Hour

// AuditTopicConfig is how the broker creates AuditTopic. Zero values mean
// the defaults.
type AuditTopicConfig struct {
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

// overrides adds the audit topic's own defaults (delete policy,
// audit.topic.retention.ms) to the overrides it is created with, unless
// its creator set them.
func (a AuditTopicConfig) overrides(topic string, given map[string]string) map[string]string {
	if topic != AuditTopic {
		return given
	}
	out := map[string]string{"cleanup.policy": policyDelete, "retention.ms": strconv.FormatInt(a.retentionMs(), 10)}
	for k, v := range given {
		out[k] = v
	}
	return out
}

func (a AuditTopicConfig) retentionMs() int64 {
	switch {
	case a.Retention == 0:
		return DefaultAuditTopicRetention.Milliseconds()
	case a.Retention < 0:
		return -1
	}
	return a.Retention.Milliseconds()
}

// Validate names the invalid key.
func (a AuditTopicConfig) Validate() error {
	switch {
	case a.Partitions < 0:
		return fmt.Errorf("%w: audit.topic.num.partitions: must be >= 1, got %d", ErrInvalidConfig, a.Partitions)
	case a.Partitions > maxPartitionsPerTopic:
		return fmt.Errorf("%w: audit.topic.num.partitions: must be <= %d, got %d", ErrInvalidConfig, maxPartitionsPerTopic, a.Partitions)
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
		n, err := parseLong(v, -1)
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

func init() {
	// The keys live here with the feature; the table is config.go's.
	for k, set := range auditPropertySetters {
		propertySetters[k] = set
	}
}

// creationDefaults returns the partitions and replication factor a new
// topic gets when its creator leaves them to the broker, with live brokers
// registered: num.partitions and default.replication.factor, except for
// the audit topic (see AuditTopic).
func (c Config) creationDefaults(topic string, live int) (int32, int16) {
	c = c.withDefaults()
	if topic != AuditTopic {
		return c.NumPartitions, c.DefaultReplicationFactor
	}
	n, rf := c.Audit.Partitions, c.Audit.Replication
	if n == 0 {
		n = c.NumPartitions
	}
	if rf == 0 {
		rf = DefaultAuditTopicReplication
	}
	return n, cappedReplication(rf, live)
}

// cappedReplication is want capped at the live brokers (at least 1), as
// Kafka creates its internal topics: a cluster smaller than the factor
// still gets the topic, with fewer replicas.
func cappedReplication(want int16, live int) int16 {
	return int16(min(int(want), max(live, 1)))
}
