package broker

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	plog "github.com/tributary/tributary/broker/log"
)

// Kafka's "never" for flush.messages and flush.ms.
const kafkaNever = math.MaxInt64

// Values of message.timestamp.type (frozen by Kafka).
const (
	createTime    = "CreateTime"
	logAppendTime = "LogAppendTime"
)

// topicConfig is the effective configuration of one topic: the broker's
// defaults overridden by the topic's entries of /config/topics/<topic>.
type topicConfig struct {
	log plogSettings
	// MaxMessageBytes is max.message.bytes: the largest batch Produce
	// accepts for the topic.
	MaxMessageBytes int32
	// LogAppendTime is message.timestamp.type=LogAppendTime: the broker
	// stamps every batch with its append time.
	LogAppendTime bool
	// MinInsyncReplicas is min.insync.replicas (acks=all, produce.go);
	// UncleanLeaderElection unclean.leader.election.enable, which the
	// controller reads from the overrides (broker/cluster).
	MinInsyncReplicas     int32
	UncleanLeaderElection bool
	// LeaderThrottled and FollowerThrottled are the replicas
	// *.replication.throttled.replicas name (throttle.go).
	LeaderThrottled, FollowerThrottled throttledReplicas
}

// plogSettings are the settings fixed when a log is opened; a change
// reopens the partition's log. It is comparable.
type plogSettings struct {
	SegmentBytes          int64
	SegmentMs             time.Duration
	Retention             time.Duration
	RetentionBytes        int64
	FlushIntervalMessages int64
	FlushInterval         time.Duration
	IndexIntervalBytes    int
	ProducerIDExpiration  time.Duration
	// CleanupPolicy is cleanup.policy, normalized (policyDelete,
	// policyCompact or policyCompactDelete); the rest are the cleaner's
	// topic keys (cleanerconfig.go).
	CleanupPolicy          string
	MinCleanableDirtyRatio float64
	MinCompactionLag       time.Duration
	MaxCompactionLag       time.Duration
	DeleteRetention        time.Duration
}

// plogConfig is the storage engine's configuration for these settings.
func (s plogSettings) plogConfig() plog.Config {
	return withCleanup(plog.Config{
		SegmentBytes:          s.SegmentBytes,
		SegmentMs:             s.SegmentMs,
		IndexIntervalBytes:    s.IndexIntervalBytes,
		FlushIntervalMessages: s.FlushIntervalMessages,
		FlushInterval:         s.FlushInterval,
		RetentionMs:           s.Retention,
		RetentionBytes:        s.RetentionBytes,
		ProducerIDExpiration:  s.ProducerIDExpiration,
	}, s)
}

// topicDefaults is what a topic without overrides gets: the broker's log.*
// settings. c must have its defaults applied.
func (c Config) topicDefaults() topicConfig {
	return topicConfig{
		log: plogSettings{
			SegmentBytes:          c.SegmentBytes,
			SegmentMs:             c.SegmentMs,
			Retention:             c.Retention,
			RetentionBytes:        c.RetentionBytes,
			FlushIntervalMessages: c.FlushIntervalMessages,
			FlushInterval:         c.FlushInterval,
			IndexIntervalBytes:    c.IndexIntervalBytes,
			ProducerIDExpiration:  c.ProducerIDExpiration,
		}.withCleanerDefaults(c.Cleaner),
		MaxMessageBytes:       c.MessageMaxBytes,
		MinInsyncReplicas:     c.Replication.MinInsyncReplicas,
		UncleanLeaderElection: c.Replication.UncleanLeaderElection,
	}
}

// topicConfigKey describes one topic-level key, with the broker property
// that gives its default (Kafka's synonym).
type topicConfigKey struct {
	name      string
	brokerKey string
	typ       kmsg.ConfigType
	doc       string
	// apply parses v into tc; the error says why v is invalid.
	apply func(tc *topicConfig, v string) error
	// value renders the setting of tc as Kafka would show it.
	value func(tc topicConfig) string
	// kafkaDefault is Kafka's default value, telling DEFAULT_CONFIG from a
	// broker setting in DescribeConfigs.
	kafkaDefault string
}

// topicConfigKeys are the topic-level keys this broker applies. Anything
// else is rejected with INVALID_CONFIG: a key that would be stored but not
// honoured is worse than an error.
var topicConfigKeys = []topicConfigKey{
	{
		name: "cleanup.policy", brokerKey: "log.cleanup.policy", typ: kmsg.ConfigTypeList,
		doc: "\"delete\" removes old segments by retention; \"compact\" keeps the last record of every key (the log cleaner); \"compact,delete\" does both.",
		apply: func(tc *topicConfig, v string) error {
			p, err := parseCleanupPolicy(v)
			tc.log.CleanupPolicy = p
			return err
		},
		value:        func(tc topicConfig) string { return tc.log.CleanupPolicy },
		kafkaDefault: policyDelete,
	},
	{
		name: "retention.ms", brokerKey: "log.retention.ms", typ: kmsg.ConfigTypeLong,
		doc: "Milliseconds a closed segment is kept after its newest record; -1 keeps it forever.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseLong(v, -1)
			switch {
			case err != nil:
				return err
			case n < 0:
				tc.log.Retention = -1
			case n == 0:
				// The storage engine reads zero as "default": the
				// smallest positive duration deletes at once, as 0 does
				// in Kafka.
				tc.log.Retention = time.Nanosecond
			default:
				tc.log.Retention = durationMs(n)
			}
			return nil
		},
		value: func(tc topicConfig) string {
			if tc.log.Retention < 0 {
				return "-1"
			}
			return strconv.FormatInt(tc.log.Retention.Milliseconds(), 10)
		},
		kafkaDefault: strconv.FormatInt(DefaultRetention.Milliseconds(), 10),
	},
	{
		name: "retention.bytes", brokerKey: "log.retention.bytes", typ: kmsg.ConfigTypeLong,
		doc: "Bytes a partition may hold before its oldest segments are deleted; -1 means no limit.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseLong(v, -1)
			switch {
			case err != nil:
				return err
			case n < 0:
				tc.log.RetentionBytes = -1
			case n == 0:
				// Zero is "no limit" to the storage engine.
				tc.log.RetentionBytes = 1
			default:
				tc.log.RetentionBytes = n
			}
			return nil
		},
		value: func(tc topicConfig) string {
			if tc.log.RetentionBytes <= 0 {
				return "-1"
			}
			return strconv.FormatInt(tc.log.RetentionBytes, 10)
		},
		kafkaDefault: "-1",
	},
	{
		name: "segment.bytes", brokerKey: "log.segment.bytes", typ: kmsg.ConfigTypeInt,
		doc: "Size at which a segment file is closed and a new one started.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseInt(v, 14)
			tc.log.SegmentBytes = int64(n)
			return err
		},
		value:        func(tc topicConfig) string { return strconv.FormatInt(tc.log.SegmentBytes, 10) },
		kafkaDefault: strconv.Itoa(DefaultSegmentBytes),
	},
	{
		name: "segment.ms", brokerKey: "log.roll.ms", typ: kmsg.ConfigTypeLong,
		doc: "Age in milliseconds at which a segment is closed even if it is not full.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseLong(v, 1)
			tc.log.SegmentMs = durationMs(n)
			return err
		},
		value:        func(tc topicConfig) string { return strconv.FormatInt(tc.log.SegmentMs.Milliseconds(), 10) },
		kafkaDefault: strconv.FormatInt(DefaultSegmentMs.Milliseconds(), 10),
	},
	{
		name: "index.interval.bytes", brokerKey: "log.index.interval.bytes", typ: kmsg.ConfigTypeInt,
		doc: "Bytes of log between two entries of the sparse offset index.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseInt(v, 0)
			tc.log.IndexIntervalBytes = int(n)
			return err
		},
		value:        func(tc topicConfig) string { return strconv.Itoa(tc.log.IndexIntervalBytes) },
		kafkaDefault: strconv.Itoa(DefaultIndexIntervalBytes),
	},
	{
		name: "flush.messages", brokerKey: "log.flush.interval.messages", typ: kmsg.ConfigTypeLong,
		doc: "Messages appended between two fsyncs; 9223372036854775807 leaves flushing to the OS.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseLong(v, 1)
			if n == kafkaNever {
				n = 0
			}
			tc.log.FlushIntervalMessages = n
			return err
		},
		value: func(tc topicConfig) string {
			if tc.log.FlushIntervalMessages <= 0 {
				return strconv.FormatInt(kafkaNever, 10)
			}
			return strconv.FormatInt(tc.log.FlushIntervalMessages, 10)
		},
		kafkaDefault: strconv.FormatInt(kafkaNever, 10),
	},
	{
		name: "flush.ms", brokerKey: "log.flush.interval.ms", typ: kmsg.ConfigTypeLong,
		doc: "Milliseconds between two fsyncs; 9223372036854775807 leaves flushing to the OS.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseLong(v, 0)
			switch {
			case err != nil:
			case n == 0:
				// Zero is "no timed flush" to the storage engine.
				tc.log.FlushInterval = time.Millisecond
			case n > math.MaxInt64/int64(time.Millisecond):
				tc.log.FlushInterval = 0
			default:
				tc.log.FlushInterval = durationMs(n)
			}
			return err
		},
		value: func(tc topicConfig) string {
			if tc.log.FlushInterval <= 0 {
				return strconv.FormatInt(kafkaNever, 10)
			}
			return strconv.FormatInt(tc.log.FlushInterval.Milliseconds(), 10)
		},
		kafkaDefault: strconv.FormatInt(kafkaNever, 10),
	},
	{
		name: "max.message.bytes", brokerKey: "message.max.bytes", typ: kmsg.ConfigTypeInt,
		doc: "Largest record batch, in bytes, that Produce accepts for the topic.",
		apply: func(tc *topicConfig, v string) error {
			n, err := parseInt(v, 0)
			tc.MaxMessageBytes = n
			return err
		},
		value:        func(tc topicConfig) string { return strconv.Itoa(int(tc.MaxMessageBytes)) },
		kafkaDefault: strconv.Itoa(DefaultMessageMaxBytes),
	},
	{
		name: "message.timestamp.type", brokerKey: "log.message.timestamp.type", typ: kmsg.ConfigTypeString,
		doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock.",
		apply: func(tc *topicConfig, v string) error {
			switch v {
			case createTime:
				tc.LogAppendTime = false
			case logAppendTime:
				tc.LogAppendTime = true
			default:
				return fmt.Errorf("must be %s or %s", createTime, logAppendTime)
			}
			return nil
		},
		value: func(tc topicConfig) string {
			if tc.LogAppendTime {
				return logAppendTime
			}
			return createTime
		},
		kafkaDefault: createTime,
	},
}

func findTopicConfigKey(name string) (topicConfigKey, bool) {
	i := slices.IndexFunc(topicConfigKeys, func(k topicConfigKey) bool { return k.name == name })
	if i < 0 {
		return topicConfigKey{}, false
	}
	return topicConfigKeys[i], true
}

// resolveTopicConfig applies overrides to defaults. Errors wrap
// ErrInvalidTopicConfig and name the key, in Kafka's words. The topic id is
// not a config (it lives in the topic node), so its legacy key is unknown
// here like any other.
func resolveTopicConfig(defaults topicConfig, overrides map[string]string) (topicConfig, error) {
	tc := defaults
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		k, ok := findTopicConfigKey(name)
		if !ok {
			return defaults, fmt.Errorf("%w: Unknown topic config name: %s", ErrInvalidTopicConfig, name)
		}
		v := overrides[name]
		if err := k.apply(&tc, v); err != nil {
			return defaults, fmt.Errorf("%w: Invalid value %s for configuration %s: %v", ErrInvalidTopicConfig, v, name, err)
		}
	}
	return tc, nil
}

func parseLong(v string, minimum int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Not a number of type LONG")
	}
	if n < minimum {
		return 0, fmt.Errorf("Value must be at least %d", minimum)
	}
	return n, nil
}

func parseInt(v string, minimum int32) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("Not a number of type INT")
	}
	if int32(n) < minimum {
		return 0, fmt.Errorf("Value must be at least %d", minimum)
	}
	return int32(n), nil
}

// durationMs converts milliseconds, clamping what time.Duration cannot hold.
func durationMs(n int64) time.Duration {
	if n > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}
