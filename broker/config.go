package broker

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/internal/coord/zkcoord"
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
)

// Config is the broker's configuration. The zero value of every field means
// "Kafka's default", except LogDirs, which is required. Field comments name
// the server.properties key that sets the field.
type Config struct {
	// BrokerID is broker.id.
	BrokerID int32
	// Listeners is listeners: one PLAINTEXT://host:port (or bare host:port)
	// to accept clients on. Port 0 picks a free port.
	Listeners string
	// AdvertisedListeners is advertised.listeners: the address clients are
	// told to connect to. Empty means the bound listener address.
	AdvertisedListeners string
	// LogDirs is log.dirs (or log.dir): directories holding partitions.
	LogDirs []string
	// NumPartitions is num.partitions: partitions of auto-created topics
	// and of CreateTopics requests that leave the count to the broker.
	NumPartitions int32
	// DisableAutoCreateTopics is auto.create.topics.enable=false.
	DisableAutoCreateTopics bool
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
	// ZooKeeperConnect is zookeeper.connect: "h1:2181,h2:2181/chroot".
	// Empty runs the broker alone on in-process coordination.
	ZooKeeperConnect string
	// ZooKeeperSessionTimeout is zookeeper.session.timeout.ms.
	ZooKeeperSessionTimeout time.Duration
	// ZooKeeperConnectionTimeout is zookeeper.connection.timeout.ms: how
	// long start-up waits for a session. Default: the session timeout.
	ZooKeeperConnectionTimeout time.Duration
	// DefaultReplicationFactor is default.replication.factor, used when a
	// CreateTopics request leaves the factor to the broker (-1), and for
	// auto-created topics.
	DefaultReplicationFactor int16
	// BrokerRack is broker.rack: written into the broker's registration;
	// topics are assigned rack-aware when every live broker has one.
	BrokerRack string
	// Replication is min.insync.replicas, replica.*, unclean.leader.*,
	// auto.leader.rebalance.* and controlled.shutdown.* (replicaconfig.go).
	Replication ReplicationConfig
	// Groups configures the group coordinator (offsets.topic.*, group.*;
	// see broker/group.Config and groups.go).
	Groups group.Config
	// Limits bounds connections, open files and topic creation
	// (connections.max.idle.ms, max.connections*, log.max.open.files,
	// controller.mutation.rate; see limits.go).
	Limits LimitsConfig
	// Cleaner is log.cleaner.* and the cleaner's topic defaults (cleanerconfig.go).
	Cleaner CleanerConfig
}

// withDefaults returns c with zero fields replaced by defaults.
func (c Config) withDefaults() Config {
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
	c.Replication = c.Replication.withDefaults()
	if c.DefaultReplicationFactor == 0 {
		c.DefaultReplicationFactor = DefaultReplicationFactor
	}
	return c
}

// Validate checks the configuration, after defaults are applied, and
// returns an error naming the offending key.
func (c Config) Validate() error {
	c = c.withDefaults()
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
	if _, err := listenerHostPort(c.Listeners); err != nil {
		return fmt.Errorf("%w: listeners: %v", ErrInvalidConfig, err)
	}
	if c.AdvertisedListeners != "" {
		hp, err := listenerHostPort(c.AdvertisedListeners)
		if err != nil {
			return fmt.Errorf("%w: advertised.listeners: %v", ErrInvalidConfig, err)
		}
		if _, port, _ := net.SplitHostPort(hp); port == "0" {
			return fmt.Errorf("%w: advertised.listeners: port 0 cannot be advertised", ErrInvalidConfig)
		}
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
	if err := c.Replication.Validate(); err != nil {
		return err
	}
	if err := c.Groups.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c.Limits.Validate()
}

// listenerHostPort turns "PLAINTEXT://host:port" or "host:port" into
// "host:port". Only one PLAINTEXT listener is supported.
func listenerHostPort(l string) (string, error) {
	l = strings.TrimSpace(l)
	if strings.Contains(l, ",") {
		return "", fmt.Errorf("only one listener is supported, got %q", l)
	}
	if i := strings.Index(l, "://"); i >= 0 {
		if proto := strings.ToUpper(l[:i]); proto != "PLAINTEXT" {
			return "", fmt.Errorf("only PLAINTEXT listeners are supported, got %q", l)
		}
		l = l[i+3:]
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil {
		return "", err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("bad port %q", port)
	}
	return net.JoinHostPort(host, port), nil
}

// ParseProperties reads a server.properties file and returns the
// configuration, warnings for keys it does not know, and an error naming the
// first key whose value is invalid.
func ParseProperties(r io.Reader) (Config, []string, error) {
	props, err := ReadProperties(r)
	if err != nil {
		return Config{}, nil, err
	}
	return ConfigFromProperties(props)
}

// ReadProperties parses the Java .properties format: key=value, key:value or
// "key value" lines, # and ! comments, backslash line continuations and
// escapes. Later keys override earlier ones.
func ReadProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		// An odd number of trailing backslashes continues the line.
		trailing := len(line) - len(strings.TrimRight(line, "\\"))
		if trailing%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		k, v := splitProperty(logical.String())
		logical.Reset()
		props[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading properties: %w", err)
	}
	if logical.Len() > 0 {
		k, v := splitProperty(logical.String())
		props[k] = v
	}
	return props, nil
}

func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key = line[:i]
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return unescapeProperty(key), unescapeProperty(rest)
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// propertySetters maps every known key to the function applying it. Keys
// whose value is ignored on purpose (they configure what Kafka has and we do
// not need, like replication settings) are accepted silently.
var propertySetters = map[string]func(c *Config, v string) error{
	"broker.id": func(c *Config, v string) error { return setInt32(&c.BrokerID, v) },
	"node.id":   func(c *Config, v string) error { return setInt32(&c.BrokerID, v) },
	"listeners": func(c *Config, v string) error { c.Listeners = v; return nil },
	"advertised.listeners": func(c *Config, v string) error {
		c.AdvertisedListeners = v
		return nil
	},
	"log.dirs": setLogDirs,
	"log.dir":  setLogDirs,
	"num.partitions": func(c *Config, v string) error {
		if err := setInt32(&c.NumPartitions, v); err != nil {
			return err
		}
		if c.NumPartitions < 1 {
			return fmt.Errorf("must be >= 1")
		}
		return nil
	},
	"auto.create.topics.enable": setAutoCreate,
	"log.segment.bytes":         func(c *Config, v string) error { return setInt64(&c.SegmentBytes, v) },
	"log.retention.bytes":       func(c *Config, v string) error { return setInt64(&c.RetentionBytes, v) },
	"log.retention.check.interval.ms": func(c *Config, v string) error {
		return setDuration(&c.RetentionCheckInterval, v, time.Millisecond)
	},
	"log.flush.interval.messages": func(c *Config, v string) error {
		if err := setInt64(&c.FlushIntervalMessages, v); err != nil {
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
		return setDuration(&c.ProducerIDExpiration, v, time.Millisecond)
	},
	"log.index.interval.bytes": func(c *Config, v string) error {
		var n int32
		err := setInt32(&n, v)
		c.IndexIntervalBytes = int(n)
		return err
	},
	"message.max.bytes":        func(c *Config, v string) error { return setInt32(&c.MessageMaxBytes, v) },
	"socket.request.max.bytes": func(c *Config, v string) error { return setInt32(&c.SocketRequestMaxBytes, v) },
	"metrics.listen":           func(c *Config, v string) error { c.MetricsListen = v; return nil },
	"zookeeper.connect":        func(c *Config, v string) error { c.ZooKeeperConnect = v; return nil },
	"zookeeper.session.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.ZooKeeperSessionTimeout, v)
	},
	"zookeeper.connection.timeout.ms": func(c *Config, v string) error {
		return setPositiveDuration(&c.ZooKeeperConnectionTimeout, v)
	},
	"default.replication.factor": func(c *Config, v string) error {
		var n int32
		if err := setInt32(&n, v); err != nil {
			return err
		}
		if n < 1 || n > math.MaxInt16 {
			return fmt.Errorf("must be >= 1")
		}
		c.DefaultReplicationFactor = int16(n)
		return nil
	},
}

// unitKeys are keys whose unit variants override each other in Kafka's
// order: ms beats minutes beats hours.
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

// ignoredKeys are Kafka keys that make sense for Kafka but not for a single
// Tributary broker; accepting them lets a stock server.properties work.
var ignoredKeys = map[string]bool{
	"num.network.threads": true, "num.io.threads": true, "socket.send.buffer.bytes": true,
	"socket.receive.buffer.bytes": true, "num.recovery.threads.per.data.dir": true,
	"offsets.topic.replication.factor": true, "transaction.state.log.replication.factor": true,
	"transaction.state.log.min.isr": true, "group.initial.rebalance.delay.ms": true,
	"listener.security.protocol.map": true, "inter.broker.listener.name": true,
}

// ConfigFromProperties builds a Config from Kafka-named properties. It
// returns warnings for unknown keys and an error naming the first (in key
// order) invalid value.
func ConfigFromProperties(props map[string]string) (Config, []string, error) {
	var c Config
	var warnings []string
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	unitKnown := map[string]bool{}
	for _, u := range unitKeys {
		for _, k := range u.keys {
			unitKnown[k] = true
		}
	}
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		if set, ok := propertySetters[k]; ok {
			if err := set(&c, v); err != nil {
				return Config{}, warnings, fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, k, v, err)
			}
			continue
		}
		if unitKnown[k] || ignoredKeys[k] {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("unknown configuration key %q ignored", k))
	}
	for _, u := range unitKeys {
		for i, k := range u.keys {
			v, ok := props[k]
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Config{}, warnings, fmt.Errorf("%w: %s=%q: not an integer", ErrInvalidConfig, k, v)
			}
			d := u.set(&c)
			switch {
			case n < 0:
				*d = -1
			case n == 0:
				return Config{}, warnings, fmt.Errorf("%w: %s=%q: must be positive or -1", ErrInvalidConfig, k, v)
			default:
				*d = time.Duration(n) * u.units[i]
			}
			break
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, warnings, err
	}
	return c, warnings, nil
}

func setInt32(dst *int32, v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return fmt.Errorf("not a 32-bit integer")
	}
	*dst = int32(n)
	return nil
}

func setInt64(dst *int64, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	*dst = n
	return nil
}

func setDuration(dst *time.Duration, v string, unit time.Duration) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	if n < 0 {
		return fmt.Errorf("must be >= 0")
	}
	// Kafka's "never" for intervals is Long.MAX_VALUE: clamp rather than overflow.
	if n > int64(1<<62)/int64(unit) {
		n = int64(1<<62) / int64(unit)
	}
	*dst = time.Duration(n) * unit
	return nil
}

// setPositiveDuration parses milliseconds that must be at least 1.
func setPositiveDuration(dst *time.Duration, v string) error {
	if err := setDuration(dst, v, time.Millisecond); err != nil {
		return err
	}
	if *dst <= 0 {
		return fmt.Errorf("must be positive")
	}
	return nil
}

func setLogDirs(c *Config, v string) error {
	var dirs []string
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no directory given")
	}
	c.LogDirs = dirs
	return nil
}

func setAutoCreate(c *Config, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("not a boolean")
	}
	c.DisableAutoCreateTopics = !b
	return nil
}
