package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/internal/properties"
)

// Replication defaults (Kafka's).
const (
	DefaultReplicaLagTimeMax            = 30 * time.Second
	DefaultReplicaFetchWaitMax          = 500 * time.Millisecond
	DefaultReplicaFetchMaxBytes         = 1 << 20
	DefaultReplicaFetchResponseMax      = 10 << 20
	DefaultControlledShutdownTimeout    = 30 * time.Second
	DefaultLeaderImbalanceCheckInterval = cluster.DefaultLeaderImbalanceCheckInterval
)

// Replication is the broker's replication settings. Zero values mean
// Kafka's defaults; the booleans are stored negated so that the zero value
// is Kafka's default (true) for those that default to true.
type Replication struct {
	// MinInsyncReplicas is min.insync.replicas: the smallest ISR with which
	// an acks=all produce is accepted (also a topic config).
	MinInsyncReplicas int32
	// LagTimeMax is replica.lag.time.max.ms: a follower that has not caught
	// up for this long leaves the ISR.
	LagTimeMax time.Duration
	// FetchWaitMax is replica.fetch.wait.max.ms, a follower's long poll.
	FetchWaitMax time.Duration
	// FetchMaxBytes is replica.fetch.max.bytes per partition;
	// FetchResponseMaxBytes replica.fetch.response.max.bytes per fetch.
	FetchMaxBytes         int32
	FetchResponseMaxBytes int32
	// UncleanLeaderElection is unclean.leader.election.enable (also a
	// topic config): an out-of-sync replica may become leader.
	UncleanLeaderElection bool
	// NoAutoLeaderRebalance is auto.leader.rebalance.enable=false.
	NoAutoLeaderRebalance bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds.
	LeaderImbalanceCheckInterval time.Duration
	// NoControlledShutdown is controlled.shutdown.enable=false.
	NoControlledShutdown bool
	// ControlledShutdownTimeout bounds the wait for leadership to move away
	// at shutdown (Kafka: controlled.shutdown.max.retries x
	// retry.backoff; here one bound, controlled.shutdown.timeout.ms).
	ControlledShutdownTimeout time.Duration
}

// ControlledShutdownEnabled reports controlled.shutdown.enable. It is derived, not
// a field, so that no default can overwrite what the caller set.
func (r Replication) ControlledShutdownEnabled() bool { return !r.NoControlledShutdown }

func (r Replication) WithDefaults() Replication {
	if r.MinInsyncReplicas == 0 {
		r.MinInsyncReplicas = 1
	}
	if r.LagTimeMax == 0 {
		r.LagTimeMax = DefaultReplicaLagTimeMax
	}
	if r.FetchWaitMax == 0 {
		r.FetchWaitMax = DefaultReplicaFetchWaitMax
	}
	if r.FetchMaxBytes == 0 {
		r.FetchMaxBytes = DefaultReplicaFetchMaxBytes
	}
	if r.FetchResponseMaxBytes == 0 {
		r.FetchResponseMaxBytes = DefaultReplicaFetchResponseMax
	}
	if r.LeaderImbalanceCheckInterval == 0 {
		r.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if r.ControlledShutdownTimeout == 0 {
		r.ControlledShutdownTimeout = DefaultControlledShutdownTimeout
	}
	return r
}

// Validate names the first invalid key.
func (r Replication) Validate() error {
	switch {
	case r.MinInsyncReplicas < 0:
		return fmt.Errorf("%w: min.insync.replicas: must be >= 1", ErrInvalidConfig)
	case r.LagTimeMax < 0:
		return fmt.Errorf("%w: replica.lag.time.max.ms: must be positive", ErrInvalidConfig)
	case r.FetchWaitMax < 0:
		return fmt.Errorf("%w: replica.fetch.wait.max.ms: must be positive", ErrInvalidConfig)
	case r.FetchMaxBytes < 0:
		return fmt.Errorf("%w: replica.fetch.max.bytes: must be positive", ErrInvalidConfig)
	case r.FetchResponseMaxBytes < 0:
		return fmt.Errorf("%w: replica.fetch.response.max.bytes: must be positive", ErrInvalidConfig)
	case r.LeaderImbalanceCheckInterval < 0:
		return fmt.Errorf("%w: leader.imbalance.check.interval.seconds: must be positive", ErrInvalidConfig)
	case r.ControlledShutdownTimeout < 0:
		return fmt.Errorf("%w: controlled.shutdown.timeout.ms: must be positive", ErrInvalidConfig)
	case r.FetchWaitMax > r.LagTimeMax && r.LagTimeMax > 0:
		// Kafka's rule: a follower waiting longer than the lag bound would
		// drop out of the ISR while idle.
		return fmt.Errorf("%w: replica.fetch.wait.max.ms (%v) must not exceed replica.lag.time.max.ms (%v)",
			ErrInvalidConfig, r.FetchWaitMax, r.LagTimeMax)
	}
	return nil
}

// ClusterConfig completes base, the membership settings the broker
// derives from its listeners, with the rack and the controller's
// replication settings.
func (c Config) ClusterConfig(base cluster.Config) cluster.Config {
	c = c.WithDefaults()
	base.Rack = c.BrokerRack
	base.UncleanLeaderElection = c.Replication.UncleanLeaderElection
	base.AutoLeaderRebalance = !c.Replication.NoAutoLeaderRebalance
	base.LeaderImbalanceCheckInterval = c.Replication.LeaderImbalanceCheckInterval
	return base
}

// replicationSetters are the server.properties keys of Replication.
var replicationSetters = map[string]func(c *Config, v string) error{
	"broker.rack": func(c *Config, v string) error { c.BrokerRack = v; return nil },
	"min.insync.replicas": func(c *Config, v string) error {
		if err := setInt32(&c.Replication.MinInsyncReplicas, v); err != nil {
			return err
		}
		if c.Replication.MinInsyncReplicas < 1 {
			return fmt.Errorf("must be >= 1")
		}
		return nil
	},
	"replica.lag.time.max.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Replication.LagTimeMax, v)
	},
	"replica.fetch.wait.max.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Replication.FetchWaitMax, v)
	},
	"replica.fetch.max.bytes": func(c *Config, v string) error {
		return setPositiveInt32(&c.Replication.FetchMaxBytes, v)
	},
	"replica.fetch.response.max.bytes": func(c *Config, v string) error {
		return setPositiveInt32(&c.Replication.FetchResponseMaxBytes, v)
	},
	"unclean.leader.election.enable": func(c *Config, v string) error {
		return setBool(&c.Replication.UncleanLeaderElection, v, false)
	},
	"auto.leader.rebalance.enable": func(c *Config, v string) error {
		return setBool(&c.Replication.NoAutoLeaderRebalance, v, true)
	},
	"leader.imbalance.check.interval.seconds": func(c *Config, v string) error {
		return setDurationMin(&c.Replication.LeaderImbalanceCheckInterval, v, time.Second, 1)
	},
	"controlled.shutdown.enable": func(c *Config, v string) error {
		return setBool(&c.Replication.NoControlledShutdown, v, true)
	},
	"controlled.shutdown.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.Replication.ControlledShutdownTimeout, v)
	},
}

// setBool parses a boolean into *dst, negated when negate.
func setBool(dst *bool, v string, negate bool) error {
	b, err := properties.ParseBool(v)
	if err != nil {
		return err
	}
	*dst = b != negate
	return nil
}

// replicationTopicKeys are the topic-level replication keys (topic configs
// with a broker default, like every key of topicConfigKeys).
var replicationTopicKeys = []TopicKey{
	{
		Name: "min.insync.replicas", BrokerKey: "min.insync.replicas", Type: kmsg.ConfigTypeInt,
		Doc: "With acks=all, the fewest in-sync replicas with which a produce is accepted (NOT_ENOUGH_REPLICAS otherwise).",
		Apply: func(tc *Topic, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 1 {
				return fmt.Errorf("must be an integer >= 1")
			}
			tc.MinInsyncReplicas = int32(n)
			return nil
		},
		Value:        func(tc Topic) string { return strconv.Itoa(int(tc.MinInsyncReplicas)) },
		KafkaDefault: "1",
	},
	{
		Name: "unclean.leader.election.enable", BrokerKey: "unclean.leader.election.enable", Type: kmsg.ConfigTypeBoolean,
		Doc: "Whether a replica outside the ISR may become leader when no in-sync replica is live (losing what it lacks).",
		Apply: func(tc *Topic, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("must be true or false")
			}
			tc.UncleanLeaderElection = b
			return nil
		},
		Value:        func(tc Topic) string { return strconv.FormatBool(tc.UncleanLeaderElection) },
		KafkaDefault: "false",
	},
}
