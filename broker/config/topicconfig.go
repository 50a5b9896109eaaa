package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/partlog"
)

// Kafka's "never" for flush.messages and flush.ms.
const kafkaNever = math.MaxInt64

// Values of message.timestamp.type (frozen by Kafka).
const (
	createTime    = "CreateTime"
	logAppendTime = "LogAppendTime"
)

// Topic is the effective configuration of one topic: the broker's
// defaults overridden by the topic's entries of /config/topics/<topic>.
type Topic struct {
	Log LogSettings
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
	LeaderThrottled, FollowerThrottled ThrottledReplicas
}

// LogSettings are the settings fixed when a log is opened; a change
// reopens the partition's log. It is comparable.
type LogSettings struct {
	SegmentBytes          int64
	SegmentMs             time.Duration
	Retention             time.Duration
	RetentionBytes        int64
	FlushIntervalMessages int64
	FlushInterval         time.Duration
	IndexIntervalBytes    int
	ProducerIDExpiration  time.Duration
	// CleanupPolicy is cleanup.policy, normalized (PolicyDelete,
	// PolicyCompact or PolicyCompactDelete); the rest are the cleaner's
	// topic keys (cleanerconfig.go).
	CleanupPolicy          string
	MinCleanableDirtyRatio float64
	MinCompactionLag       time.Duration
	MaxCompactionLag       time.Duration
	DeleteRetention        time.Duration
}

// plogConfig is the storage engine's configuration for these settings.
func (s LogSettings) LogConfig() partlog.Config {
	return withCleanup(partlog.Config{
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
func (c Config) TopicDefaults() Topic {
	return Topic{
		Log: LogSettings{
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

// TopicKey describes one topic-level key, with the broker property
// that gives its default (Kafka's synonym).
type TopicKey struct {
	Name string
	// BrokerKey is the server.properties key giving the default; empty
	// for a key without one.
	BrokerKey string
	Type      kmsg.ConfigType
	Doc       string
	// Apply parses v into tc; the error says why v is invalid.
	Apply func(tc *Topic, v string) error
	// Value renders the setting of tc as Kafka would show it.
	Value func(tc Topic) string
	// KafkaDefault is Kafka's default value, telling DEFAULT_CONFIG from a
	// broker setting in DescribeConfigs.
	KafkaDefault string
}

// topicConfigKeys are the topic-level keys this broker applies. Anything
// else is rejected with INVALID_CONFIG: a key that would be stored but not
// honoured is worse than an error.
var topicConfigKeys = []TopicKey{
	{
		Name: "cleanup.policy", BrokerKey: "log.cleanup.policy", Type: kmsg.ConfigTypeList,
		Doc: "\"delete\" removes old segments by retention; \"compact\" keeps the last record of every key (the log cleaner); \"compact,delete\" does both.",
		Apply: func(tc *Topic, v string) error {
			p, err := ParseCleanupPolicy(v)
			tc.Log.CleanupPolicy = p
			return err
		},
		Value:        func(tc Topic) string { return tc.Log.CleanupPolicy },
		KafkaDefault: PolicyDelete,
	},
	{
		Name: "retention.ms", BrokerKey: "log.retention.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Milliseconds a closed segment is kept after its newest record; -1 keeps it forever.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, -1)
			switch {
			case err != nil:
				return err
			case n < 0:
				tc.Log.Retention = -1
			case n == 0:
				// The storage engine reads zero as "default": the
				// smallest positive duration deletes at once, as 0 does
				// in Kafka.
				tc.Log.Retention = time.Nanosecond
			default:
				tc.Log.Retention = durationMs(n)
			}
			return nil
		},
		Value: func(tc Topic) string {
			if tc.Log.Retention < 0 {
				return "-1"
			}
			return strconv.FormatInt(tc.Log.Retention.Milliseconds(), 10)
		},
		KafkaDefault: strconv.FormatInt(DefaultRetention.Milliseconds(), 10),
	},
	{
		Name: "retention.bytes", BrokerKey: "log.retention.bytes", Type: kmsg.ConfigTypeLong,
		Doc: "Bytes a partition may hold before its oldest segments are deleted; -1 means no limit.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, -1)
			switch {
			case err != nil:
				return err
			case n < 0:
				tc.Log.RetentionBytes = -1
			case n == 0:
				// Zero is "no limit" to the storage engine.
				tc.Log.RetentionBytes = 1
			default:
				tc.Log.RetentionBytes = n
			}
			return nil
		},
		Value: func(tc Topic) string {
			if tc.Log.RetentionBytes <= 0 {
				return "-1"
			}
			return strconv.FormatInt(tc.Log.RetentionBytes, 10)
		},
		KafkaDefault: "-1",
	},
	{
		Name: "segment.bytes", BrokerKey: "log.segment.bytes", Type: kmsg.ConfigTypeInt,
		Doc: "Size at which a segment file is closed and a new one started.",
		Apply: func(tc *Topic, v string) error {
			n, err := parseInt(v, 14)
			tc.Log.SegmentBytes = int64(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.FormatInt(tc.Log.SegmentBytes, 10) },
		KafkaDefault: strconv.Itoa(DefaultSegmentBytes),
	},
	{
		Name: "segment.ms", BrokerKey: "log.roll.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Age in milliseconds at which a segment is closed even if it is not full.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 1)
			tc.Log.SegmentMs = durationMs(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.FormatInt(tc.Log.SegmentMs.Milliseconds(), 10) },
		KafkaDefault: strconv.FormatInt(DefaultSegmentMs.Milliseconds(), 10),
	},
	{
		Name: "index.interval.bytes", BrokerKey: "log.index.interval.bytes", Type: kmsg.ConfigTypeInt,
		Doc: "Bytes of log between two entries of the sparse offset index.",
		Apply: func(tc *Topic, v string) error {
			n, err := parseInt(v, 0)
			tc.Log.IndexIntervalBytes = int(n)
			return err
		},
		Value:        func(tc Topic) string { return strconv.Itoa(tc.Log.IndexIntervalBytes) },
		KafkaDefault: strconv.Itoa(DefaultIndexIntervalBytes),
	},
	{
		Name: "flush.messages", BrokerKey: "log.flush.interval.messages", Type: kmsg.ConfigTypeLong,
		Doc: "Messages appended between two fsyncs; 9223372036854775807 leaves flushing to the OS.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 1)
			if n == kafkaNever {
				n = 0
			}
			tc.Log.FlushIntervalMessages = n
			return err
		},
		Value: func(tc Topic) string {
			if tc.Log.FlushIntervalMessages <= 0 {
				return strconv.FormatInt(kafkaNever, 10)
			}
			return strconv.FormatInt(tc.Log.FlushIntervalMessages, 10)
		},
		KafkaDefault: strconv.FormatInt(kafkaNever, 10),
	},
	{
		Name: "flush.ms", BrokerKey: "log.flush.interval.ms", Type: kmsg.ConfigTypeLong,
		Doc: "Milliseconds between two fsyncs; 9223372036854775807 leaves flushing to the OS.",
		Apply: func(tc *Topic, v string) error {
			n, err := ParseLong(v, 0)
			switch {
			case err != nil:
			case n == 0:
				// Zero is "no timed flush" to the storage engine.
				tc.Log.FlushInterval = time.Millisecond
			case n > math.MaxInt64/int64(time.Millisecond):
				tc.Log.FlushInterval = 0
			default:
				tc.Log.FlushInterval = durationMs(n)
			}
			return err
		},
		Value: func(tc Topic) string {
			if tc.Log.FlushInterval <= 0 {
				return strconv.FormatInt(kafkaNever, 10)
			}
			return strconv.FormatInt(tc.Log.FlushInterval.Milliseconds(), 10)
		},
		KafkaDefault: strconv.FormatInt(kafkaNever, 10),
	},
	{
		Name: "max.message.bytes", BrokerKey: "message.max.bytes", Type: kmsg.ConfigTypeInt,
		Doc: "Largest record batch, in bytes, that Produce accepts for the topic.",
		Apply: func(tc *Topic, v string) error {
			n, err := parseInt(v, 0)
			tc.MaxMessageBytes = n
			return err
		},
		Value:        func(tc Topic) string { return strconv.Itoa(int(tc.MaxMessageBytes)) },
		KafkaDefault: strconv.Itoa(DefaultMessageMaxBytes),
	},
	{
		Name: "message.timestamp.type", BrokerKey: "log.message.timestamp.type", Type: kmsg.ConfigTypeString,
		Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock.",
		Apply: func(tc *Topic, v string) error {
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
		Value: func(tc Topic) string {
			if tc.LogAppendTime {
				return logAppendTime
			}
			return createTime
		},
		KafkaDefault: createTime,
	},
}

// TopicKeys are the topic-level keys this broker applies, in a fixed
// order; the slice is shared and must not be modified.
func TopicKeys() []TopicKey { return topicKeys }

// topicKeys is every file's keys, in one table.
var topicKeys = slices.Concat(topicConfigKeys, cleanerTopicKeys, replicationTopicKeys, throttleTopicKeys)

// FindTopicKey returns the topic-level key name.
func FindTopicKey(name string) (TopicKey, bool) {
	i := slices.IndexFunc(topicKeys, func(k TopicKey) bool { return k.Name == name })
	if i < 0 {
		return TopicKey{}, false
	}
	return topicKeys[i], true
}

// ResolveTopic applies overrides to defaults. Errors wrap
// ErrInvalidTopicConfig and name the key, in Kafka's words. The topic id is
// not a config (it lives in the topic node), so its legacy key is unknown
// here like any other.
func ResolveTopic(defaults Topic, overrides map[string]string) (Topic, error) {
	tc := defaults
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		k, ok := FindTopicKey(name)
		if !ok {
			return defaults, fmt.Errorf("%w: Unknown topic config name: %s", ErrInvalidTopicConfig, name)
		}
		v := overrides[name]
		if err := k.Apply(&tc, v); err != nil {
			return defaults, fmt.Errorf("%w: Invalid value %s for configuration %s: %v", ErrInvalidTopicConfig, v, name, err)
		}
	}
	return tc, nil
}

// ParseLong parses a topic or dynamic config value of type LONG, at least
// minimum; the error is Kafka's wording.
func ParseLong(v string, minimum int64) (int64, error) {
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
