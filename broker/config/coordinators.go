package config

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// groupPropertySetters are the group coordinator's server.properties keys.
var groupPropertySetters = map[string]func(c *Config, v string) error{
	"offsets.topic.num.partitions": func(c *Config, v string) error {
		return setPositiveInt32(&c.Groups.OffsetsTopicPartitions, v)
	},
	"offsets.topic.replication.factor": func(c *Config, v string) error {
		return setReplicationFactor(&c.Groups.OffsetsReplication, v)
	},
	"group.min.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.MinSessionTimeout, v)
	},
	"group.max.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.MaxSessionTimeout, v)
	},
	"group.initial.rebalance.delay.ms": func(c *Config, v string) error {
		if err := setDuration(&c.Groups.InitialRebalanceDelay, v, time.Millisecond); err != nil {
			return err
		}
		if c.Groups.InitialRebalanceDelay == 0 {
			c.Groups.InitialRebalanceDelay = -1 // zero means the default in Config
		}
		return nil
	},
	"group.max.size":            func(c *Config, v string) error { return setPositiveInt32(&c.Groups.MaxGroupSize, v) },
	"offset.metadata.max.bytes": func(c *Config, v string) error { return setPositiveInt32(&c.Groups.OffsetMetadataMaxBytes, v) },
	"offsets.retention.minutes": func(c *Config, v string) error {
		return setDurationMin(&c.Groups.OffsetsRetention, v, time.Minute, 1)
	},
	"offsets.retention.check.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.OffsetsRetentionCheck, v)
	},
	"offsets.topic.segment.bytes": func(c *Config, v string) error {
		return setInt32Min(&c.Groups.OffsetsTopicSegmentBytes, v, 14)
	},
}

func setPositiveInt32(dst *int32, v string) error { return setInt32Min(dst, v, 1) }

// setReplicationFactor parses a replication factor: 1 up to an int16's range.
func setReplicationFactor(dst *int16, v string) error {
	var n int32
	if err := setPositiveInt32(&n, v); err != nil {
		return err
	}
	if n > math.MaxInt16 {
		return fmt.Errorf("must be <= %d", math.MaxInt16)
	}
	*dst = int16(n)
	return nil
}

// The consumer group protocol's keys (KIP-848), with the feature; the
// table is config.go's.
var consumerGroupPropertySetters = map[string]func(c *Config, v string) error{
	"group.consumer.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.ConsumerSessionTimeout, v)
	},
	"group.consumer.heartbeat.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Groups.ConsumerHeartbeatInterval, v)
	},
	"group.consumer.max.size": func(c *Config, v string) error { return setPositiveInt32(&c.Groups.ConsumerMaxSize, v) },
	"group.consumer.assignors": func(c *Config, v string) error {
		var names []string
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		c.Groups.ConsumerAssignors = names
		return nil
	},
}

// txnPropertySetters are the transaction coordinator's server.properties
// keys.
var txnPropertySetters = map[string]func(c *Config, v string) error{
	"transaction.state.log.num.partitions": func(c *Config, v string) error {
		return setPositiveInt32(&c.Txn.StatePartitions, v)
	},
	"transaction.state.log.replication.factor": func(c *Config, v string) error {
		return setReplicationFactor(&c.Txn.StateReplication, v)
	},
	"transaction.state.log.min.isr": func(c *Config, v string) error { return setPositiveInt32(&c.Txn.StateMinISR, v) },
	"transaction.state.log.segment.bytes": func(c *Config, v string) error {
		return setInt32Min(&c.Txn.StateSegmentBytes, v, 14)
	},
	"transaction.max.timeout.ms": func(c *Config, v string) error { return setPositiveDuration(&c.Txn.MaxTimeout, v) },
	"transactional.id.expiration.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Txn.IDExpiration, v)
	},
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Txn.AbortCheckInterval, v)
	},
	"transaction.remove.expired.transaction.cleanup.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Txn.RemoveExpiredInterval, v)
	},
}
