package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/txn"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// Defaults, matching Apache Kafka's where Kafka has one.
const (
	DefaultListeners              = "PLAINTEXT://:9092"
	DefaultNumPartitions          = 1
	DefaultSegmentBytes           = 1 << 30
	DefaultSegmentMs              = 7 * 24 * time.Hour
	DefaultRetention              = 7 * 24 * time.Hour
	DefaultRetentionCheckInterval = 5 * time.Minute
	DefaultIndexIntervalBytes     = 4096
	DefaultMessageMaxBytes        = 1048588
	DefaultSocketRequestMaxBytes  = 100 << 20
	DefaultZooKeeperSession       = 18 * time.Second
	DefaultReplicationFactor      = 1
	// DefaultTLSHandshakeTimeout is ssl.handshake.timeout.ms's default.
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// MaxPartitionsPerTopic bounds one request's work: each partition is a
// directory and open files, and one broker cannot serve more usefully.
const MaxPartitionsPerTopic = 10_000

// Config is the broker's configuration. The zero value of every field means
// "Kafka's default", except LogDirs, which is required. Field comments name
// the server.properties key that sets the field.
type Config struct {
	// BrokerID is broker.id.
	BrokerID int32
	// Listeners is listeners: NAME://host:port,... to accept clients on
	// (a bare host:port is PLAINTEXT); one accept loop each. Port 0 picks
	// a free port. See listeners.go.
	Listeners string
	// AdvertisedListeners is advertised.listeners: per listener name, the
	// address clients are told to connect to. A listener not named here
	// advertises its bound address.
	AdvertisedListeners string
	// ListenerSecurityProtocolMap is listener.security.protocol.map,
	// NAME:PROTOCOL,...; empty is Kafka's default (each protocol's name
	// maps to itself).
	ListenerSecurityProtocolMap string
	// InterBrokerListenerName is inter.broker.listener.name and
	// SecurityInterBrokerProtocol security.inter.broker.protocol (at most
	// one may be set; neither means the PLAINTEXT listener): the listener
	// replica fetchers connect to on other brokers.
	InterBrokerListenerName     string
	SecurityInterBrokerProtocol string
	// TLS is the plain ssl.* keys; ListenerTLS, by upper-case listener
	// name, a listener's own settings (listener.name.<listener>.ssl.* over
	// ssl.*, merged key by key). A listener missing from ListenerTLS uses
	// TLS. The inter-broker listener's settings are also the replica
	// fetchers' client settings (truststore, and keystore for mutual TLS).
	TLS         security.ServerTLS
	ListenerTLS map[string]security.ServerTLS
	// TLSReloadInterval is ssl.reload.check.interval.ms (Tributary's): how
	// often the key and trust store files are checked for new
	// certificates. Default security.DefaultReloadInterval.
	TLSReloadInterval time.Duration
	// TLSHandshakeTimeout is ssl.handshake.timeout.ms (Tributary's): a
	// connection that has not completed its TLS handshake this long after
	// being accepted is closed. Default DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// SASL is the SASL keys of the SASL_* listeners and of the
	// inter-broker client (sasl.enabled.mechanisms,
	// sasl.mechanism.inter.broker.protocol, ...; saslconfig.go).
	SASL SASL
	// Authorizer is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found (authorize.go).
	Authorizer Authorizer
	// LogDirs is log.dirs (or log.dir): directories holding partitions.
	LogDirs []string
	// NumPartitions is num.partitions: partitions of auto-created topics
	// and of CreateTopics requests that leave the count to the broker.
	NumPartitions int32
	// DisableAutoCreateTopics is auto.create.topics.enable=false.
	DisableAutoCreateTopics bool
	// DisableTxnVerification is
	// transaction.partition.verification.enable=false: the leader appends
	// a producer's first transactional batch without asking the
	// transaction coordinator whether the partition is in its transaction
	// (KIP-890; see txnverify.go).
	DisableTxnVerification bool
	// SegmentBytes is log.segment.bytes.
	SegmentBytes int64
	// SegmentMs is log.roll.ms (or log.roll.hours).
	SegmentMs time.Duration
	// Retention is log.retention.ms (or .minutes, .hours); negative means
	// keep forever.
	Retention time.Duration
	// RetentionBytes is log.retention.bytes per partition; zero or negative
	// means no size limit.
	RetentionBytes int64
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// FlushIntervalMessages is log.flush.interval.messages; zero means
	// leave flushing to the OS (Kafka's default).
	FlushIntervalMessages int64
	// FlushInterval is log.flush.interval.ms; zero means no timed flush.
	FlushInterval time.Duration
	// IndexIntervalBytes is log.index.interval.bytes.
	IndexIntervalBytes int
	// ProducerIDExpiration is producer.id.expiration.ms: how long an
	// idempotent producer's state is kept after its last append; zero
	// means 24 hours, negative never.
	ProducerIDExpiration time.Duration
	// MessageMaxBytes is message.max.bytes: the largest record batch accepted.
	MessageMaxBytes int32
	// SocketRequestMaxBytes is socket.request.max.bytes: the largest frame
	// accepted; a bigger one closes the connection.
	SocketRequestMaxBytes int32
	// MetricsListen is metrics.listen: host:port serving Prometheus
	// /metrics; empty disables it.
	MetricsListen string
	// Metrics is the metrics listener's TLS, basic authentication and
	// pprof switch (metrics.ssl.*, metrics.authentication.*,
	// metrics.authorization.roles.*, metrics.pprof.enable; see
	// network.MetricsConfig).
	Metrics network.MetricsConfig
	// ZooKeeperConnect is zookeeper.connect: "h1:2181,h2:2181/chroot".
	// Empty runs the broker alone on in-process coordination.
	ZooKeeperConnect string
	// ZooKeeperSessionTimeout is zookeeper.session.timeout.ms.
	ZooKeeperSessionTimeout time.Duration
	// ZooKeeperConnectionTimeout is zookeeper.connection.timeout.ms: how
	// long start-up waits for a session. Default: the session timeout.
	ZooKeeperConnectionTimeout time.Duration
	// ZooKeeperAuth is zookeeper.set.acl and zookeeper.digest.auth
	// (saslconfig.go).
	ZooKeeperAuth ZooKeeperAuth
	// DefaultReplicationFactor is default.replication.factor, used when a
	// CreateTopics request leaves the factor to the broker (-1), and for
	// auto-created topics.
	DefaultReplicationFactor int16
	// BrokerRack is broker.rack: written into the broker's registration;
	// topics are assigned rack-aware when every live broker has one.
	BrokerRack string
	// Replication is min.insync.replicas, replica.*, unclean.leader.*,
	// auto.leader.rebalance.* and controlled.shutdown.* (replicaconfig.go).
	Replication Replication
	// Groups configures the group coordinator (offsets.topic.*, group.*;
	// see broker/group.Config and groups.go).
	Groups group.Config
	// Txn configures the transaction coordinator (transaction.*,
	// transactional.id.*; see broker/txn.Config and txns.go).
	Txn txn.Config
	// Limits bounds connections, open files and topic creation
	// (connections.max.idle.ms, max.connections*, log.max.open.files,
	// controller.mutation.rate; see limits.go).
	Limits Limits
	// Audit is audit.topic.*: how the broker creates the audit topic
	// (audittopic.go).
	Audit Audit
	// Cleaner is log.cleaner.* and the cleaner's topic defaults (cleanerconfig.go).
	Cleaner Cleaner
}

// withDefaults returns c with zero fields replaced by defaults.
func (c Config) WithDefaults() Config {
	if c.Listeners == "" {
		c.Listeners = DefaultListeners
	}
	if c.NumPartitions == 0 {
		c.NumPartitions = DefaultNumPartitions
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.RetentionCheckInterval == 0 {
		c.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.MessageMaxBytes == 0 {
		c.MessageMaxBytes = DefaultMessageMaxBytes
	}
	if c.SocketRequestMaxBytes == 0 {
		c.SocketRequestMaxBytes = DefaultSocketRequestMaxBytes
	}
	if c.ZooKeeperSessionTimeout == 0 {
		c.ZooKeeperSessionTimeout = DefaultZooKeeperSession
	}
	if c.ZooKeeperConnectionTimeout == 0 {
		c.ZooKeeperConnectionTimeout = c.ZooKeeperSessionTimeout
	}
	c.Replication = c.Replication.WithDefaults()
	if c.DefaultReplicationFactor == 0 {
		c.DefaultReplicationFactor = DefaultReplicationFactor
	}
	return c
}

// Validate checks the configuration, after defaults are applied, and
// returns an error naming the offending key.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if len(c.LogDirs) == 0 {
		return fmt.Errorf("%w: log.dirs: at least one directory is required", ErrInvalidConfig)
	}
	for _, d := range c.LogDirs {
		if strings.TrimSpace(d) == "" {
			return fmt.Errorf("%w: log.dirs: empty directory name", ErrInvalidConfig)
		}
	}
	if c.BrokerID < 0 {
		return fmt.Errorf("%w: broker.id: must be >= 0, got %d", ErrInvalidConfig, c.BrokerID)
	}
	if _, err := c.ListenerPlan(); err != nil {
		return err
	}
	if c.TLSReloadInterval < 0 {
		return fmt.Errorf("%w: ssl.reload.check.interval.ms: must be positive", ErrInvalidConfig)
	}
	if c.TLSHandshakeTimeout < 0 {
		return fmt.Errorf("%w: ssl.handshake.timeout.ms: must be positive", ErrInvalidConfig)
	}
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("%w: num.partitions: must be >= 1, got %d", ErrInvalidConfig, c.NumPartitions)
	case c.SegmentBytes < 14 || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("%w: log.segment.bytes: must be in [14, %d], got %d", ErrInvalidConfig, int64(math.MaxInt32), c.SegmentBytes)
	case c.SegmentMs < 0:
		return fmt.Errorf("%w: log.roll.ms: must be positive", ErrInvalidConfig)
	case c.RetentionCheckInterval < 0:
		return fmt.Errorf("%w: log.retention.check.interval.ms: must be positive", ErrInvalidConfig)
	case c.FlushIntervalMessages < 0:
		return fmt.Errorf("%w: log.flush.interval.messages: must be >= 0", ErrInvalidConfig)
	case c.FlushInterval < 0:
		return fmt.Errorf("%w: log.flush.interval.ms: must be >= 0", ErrInvalidConfig)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: log.index.interval.bytes: must be >= 0", ErrInvalidConfig)
	case c.MessageMaxBytes < 0:
		return fmt.Errorf("%w: message.max.bytes: must be >= 0", ErrInvalidConfig)
	case c.SocketRequestMaxBytes < 64:
		return fmt.Errorf("%w: socket.request.max.bytes: must be >= 64", ErrInvalidConfig)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("%w: metrics.listen: %v", ErrInvalidConfig, err)
		}
	}
	if c.ZooKeeperConnect != "" {
		if _, _, err := zkcoord.ParseConnect(c.ZooKeeperConnect); err != nil {
			return fmt.Errorf("%w: zookeeper.connect: %v", ErrInvalidConfig, err)
		}
	}
	switch {
	case c.ZooKeeperSessionTimeout < time.Millisecond:
		return fmt.Errorf("%w: zookeeper.session.timeout.ms: must be positive", ErrInvalidConfig)
	case c.ZooKeeperConnectionTimeout < time.Millisecond:
		return fmt.Errorf("%w: zookeeper.connection.timeout.ms: must be positive", ErrInvalidConfig)
	case c.DefaultReplicationFactor < 0:
		return fmt.Errorf("%w: default.replication.factor: must be >= 1, got %d", ErrInvalidConfig, c.DefaultReplicationFactor)
	}
	if err := c.validateSASL(); err != nil {
		return err
	}
	if err := c.Replication.Validate(); err != nil {
		return err
	}
	if err := c.Groups.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Audit.Validate(); err != nil {
		return err
	}
	return c.Limits.Validate()
}

// ParseProperties reads a server.properties file (see internal/properties
// for the syntax) and returns the configuration, warnings for keys it does
// not know, and an error naming every key whose value is invalid.
func ParseProperties(r io.Reader) (Config, []string, error) {
	props, err := properties.Read(r)
	if err != nil {
		return Config{}, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return FromProperties(props)
}

// propertySetters maps every known key to the function applying its
// trimmed value: this file's, and those each file keeps beside its fields.
// The setters follow internal/properties' rule: a key given is taken
// literally, so a 0 where 0 is not allowed is refused, never read as the
// default.
var propertySetters = mergeSetters(brokerSetters, cleanerPropertySetters, replicationSetters,
	limitPropertySetters, auditPropertySetters, groupPropertySetters, consumerGroupPropertySetters,
	txnPropertySetters)

// setter applies one key's value to a Config.
type setter = func(c *Config, v string) error

func mergeSetters(tables ...map[string]setter) map[string]setter {
	out := map[string]setter{}
	for _, t := range tables {
		for k, f := range t {
			if _, dup := out[k]; dup {
				panic("config: key " + k + " set twice")
			}
			out[k] = f
		}
	}
	return out
}

// SetProperty applies one server.properties key to c (the dynamic broker
// configs reuse the static parsers); false if key is not a known key.
func SetProperty(c *Config, key, value string) (known bool, err error) {
	set, ok := propertySetters[key]
	if !ok {
		return false, nil
	}
	return true, set(c, value)
}

// brokerSetters are the keys of this file's fields.
var brokerSetters = map[string]func(c *Config, v string) error{
	"broker.id": func(c *Config, v string) error { return setInt32Min(&c.BrokerID, v, 0) },
	"node.id":   func(c *Config, v string) error { return setInt32Min(&c.BrokerID, v, 0) },
	"listeners": func(c *Config, v string) error { c.Listeners = v; return nil },
	"advertised.listeners": func(c *Config, v string) error {
		c.AdvertisedListeners = v
		return nil
	},
	"listener.security.protocol.map": func(c *Config, v string) error { c.ListenerSecurityProtocolMap = v; return nil },
	"inter.broker.listener.name":     func(c *Config, v string) error { c.InterBrokerListenerName = v; return nil },
	"security.inter.broker.protocol": func(c *Config, v string) error { c.SecurityInterBrokerProtocol = v; return nil },
	"ssl.reload.check.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.TLSReloadInterval, v)
	},
	"ssl.handshake.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.TLSHandshakeTimeout, v)
	},
	"log.dirs":                  setLogDirs,
	"log.dir":                   setLogDirs,
	"num.partitions":            func(c *Config, v string) error { return setInt32Min(&c.NumPartitions, v, 1) },
	"auto.create.topics.enable": setAutoCreate,
	"transaction.partition.verification.enable": func(c *Config, v string) error {
		b, err := properties.ParseBool(v)
		if err != nil {
			return err
		}
		c.DisableTxnVerification = !b
		return nil
	},
	"log.segment.bytes":   func(c *Config, v string) error { return setInt64Min(&c.SegmentBytes, v, 14) },
	"log.retention.bytes": func(c *Config, v string) error { return setInt64(&c.RetentionBytes, v) },
	"log.retention.check.interval.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.RetentionCheckInterval, v)
	},
	"log.flush.interval.messages": func(c *Config, v string) error {
		if err := setInt64Min(&c.FlushIntervalMessages, v, 1); err != nil {
			return err
		}
		// Kafka's "never" is Long.MAX_VALUE; zero is our "never".
		if c.FlushIntervalMessages == 1<<63-1 {
			c.FlushIntervalMessages = 0
		}
		return nil
	},
	"log.flush.interval.ms": func(c *Config, v string) error {
		return setDuration(&c.FlushInterval, v, time.Millisecond)
	},
	"producer.id.expiration.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.ProducerIDExpiration, v)
	},
	"log.index.interval.bytes": func(c *Config, v string) error {
		var n int32
		err := setInt32Min(&n, v, 1)
		c.IndexIntervalBytes = int(n)
		return err
	},
	"message.max.bytes":        func(c *Config, v string) error { return setInt32Min(&c.MessageMaxBytes, v, 1) },
	"socket.request.max.bytes": func(c *Config, v string) error { return setInt32Min(&c.SocketRequestMaxBytes, v, 64) },
	"metrics.listen":           func(c *Config, v string) error { c.MetricsListen = v; return nil },
	"zookeeper.connect":        func(c *Config, v string) error { c.ZooKeeperConnect = v; return nil },
	"zookeeper.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.ZooKeeperSessionTimeout, v)
	},
	"zookeeper.connection.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.ZooKeeperConnectionTimeout, v)
	},
	"default.replication.factor": func(c *Config, v string) error {
		n, err := properties.ParseInt(v, 16, 1)
		c.DefaultReplicationFactor = int16(n)
		return err
	},
}

// unitKeys are keys whose unit variants override each other in Kafka's
// order: ms beats minutes beats hours. -1 means forever; 0 is refused.
var unitKeys = []struct {
	keys  []string
	units []time.Duration
	set   func(c *Config) *time.Duration
}{
	{
		keys:  []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		units: []time.Duration{time.Millisecond, time.Minute, time.Hour},
		set:   func(c *Config) *time.Duration { return &c.Retention },
	},
	{
		keys:  []string{"log.roll.ms", "log.roll.hours"},
		units: []time.Duration{time.Millisecond, time.Hour},
		set:   func(c *Config) *time.Duration { return &c.SegmentMs },
	},
}

// ignoredKeys are Kafka keys that make sense for Kafka but not for
// Tributary: they are accepted without a warning and have no effect, so
// that a stock server.properties works.
var ignoredKeys = []string{
	"num.network.threads", "num.io.threads", "socket.send.buffer.bytes",
	"socket.receive.buffer.bytes", "num.recovery.threads.per.data.dir",
	"transaction.state.log.replication.factor", "transaction.state.log.min.isr",
}

// FromProperties builds a Config from Kafka-named properties. It
// returns warnings for unknown keys (sorted) and an error naming every
// invalid value, or else the first error of Validate.
func FromProperties(props map[string]string) (Config, []string, error) {
	var c Config
	p := properties.New(props)
	p.Ignore(ignoredKeys...)
	for _, k := range slices.Sorted(maps.Keys(propertySetters)) {
		v, ok := p.Lookup(k)
		if !ok {
			continue
		}
		if err := propertySetters[k](&c, v); err != nil {
			p.Reject(k, err)
		}
	}
	for _, u := range unitKeys {
		found := false
		for i, k := range u.keys {
			// Every variant given is checked; the first one counts.
			v, ok := p.Lookup(k)
			if !ok {
				continue
			}
			d, err := properties.ParseDuration(v, u.units[i], math.MinInt64)
			if err == nil && d == 0 {
				err = errors.New("must be positive or -1")
			}
			if err != nil {
				p.Reject(k, err)
			}
			if found || err != nil {
				continue
			}
			found = true
			*u.set(&c) = max(d, -1)
		}
	}
	c.Metrics = network.MetricsConfigFromProperties(p, "")
	readListenerTLS(&c, p)
	readSASL(&c, p)
	readAuthorizer(&c, p)
	var warnings []string
	for _, k := range p.Unknown() {
		warnings = append(warnings, fmt.Sprintf("unknown configuration key %q ignored", k))
	}
	if err := p.Err(); err != nil {
		return Config{}, warnings, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, warnings, err
	}
	return c, warnings, nil
}

func setInt32(dst *int32, v string) error { return setInt32Min(dst, v, math.MinInt32) }

func setInt32Min(dst *int32, v string, min int32) error {
	n, err := properties.ParseInt(v, 32, int64(min))
	if err != nil {
		return err
	}
	*dst = int32(n)
	return nil
}

func setInt64(dst *int64, v string) error { return setInt64Min(dst, v, math.MinInt64) }

func setInt64Min(dst *int64, v string, min int64) error {
	n, err := properties.ParseInt(v, 64, min)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}

// setDuration parses a non-negative count of unit.
func setDuration(dst *time.Duration, v string, unit time.Duration) error {
	return setDurationMin(dst, v, unit, 0)
}

func setDurationMin(dst *time.Duration, v string, unit time.Duration, min int64) error {
	d, err := properties.ParseDuration(v, unit, min)
	if err != nil {
		return err
	}
	*dst = d
	return nil
}

// setPositiveDuration parses milliseconds that must be at least 1.
func setPositiveDuration(dst *time.Duration, v string) error {
	return setDurationMin(dst, v, time.Millisecond, 1)
}

func setLogDirs(c *Config, v string) error {
	dirs := properties.SplitList(v)
	if len(dirs) == 0 {
		return errors.New("no directory given")
	}
	c.LogDirs = dirs
	return nil
}

func setAutoCreate(c *Config, v string) error {
	b, err := properties.ParseBool(v)
	if err != nil {
		return err
	}
	c.DisableAutoCreateTopics = !b
	return nil
}
