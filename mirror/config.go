package mirror

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
)

// Defaults for zero Config fields.
const (
	DefaultTargetName           = "analytics"
	DefaultTopicRename          = "${topic}"
	DefaultTopicRefreshInterval = 10 * time.Second
	DefaultCommitInterval       = 5 * time.Second
	DefaultBufferRecords        = 100_000
	DefaultBufferBytes          = 64 << 20
	DefaultLinger               = 5 * time.Millisecond
	// NoLinger is Config.Linger for producer.linger.ms=0 (zero is the default).
	NoLinger                   time.Duration = -1
	DefaultBatchBytes                        = 1 << 20
	DefaultFetchMaxBytes                     = 16 << 20
	DefaultFetchPartitionBytes               = 1 << 20
	DefaultFetchMaxWait                      = 100 * time.Millisecond
	DefaultQueuedChunks                      = 2
	DefaultShutdownTimeout                   = 30 * time.Second
	DefaultRebalanceBackoff                  = 2 * time.Second
	DefaultStoppedRetry                      = time.Minute
	// NoStoppedRetry is Config.StoppedRetry for stopped.partition.retry.ms=-1:
	// a stopped partition waits for the mirror to be restarted.
	NoStoppedRetry          time.Duration = -1
	DefaultZooKeeperSession               = 6 * time.Second
	DefaultAutoOffsetReset                = "earliest"
	// AuditTopic is mirrored from every source into the target under its own
	// name, whatever topics and topic.rename say.
	AuditTopic = "__audit"
	// DefaultTransactionTimeout is transaction.timeout.ms's default, Kafka's.
	DefaultTransactionTimeout = time.Minute
	// DefaultCheckpointInterval is emit.checkpoints.interval.seconds's
	// default, MirrorMaker 2's.
	DefaultCheckpointInterval = time.Minute
	// DefaultGroups and DefaultGroupsExclude are groups and groups.exclude's
	// defaults (MirrorMaker 2's, as one regular expression).
	DefaultGroups        = ".*"
	DefaultGroupsExclude = "console-consumer-.*|connect-.*|__.*"
	// DefaultClientID is client.id's default.
	DefaultClientID = "tributary-mirror"
)

// SourceConfig is one source cluster, source.<name>.* in the properties.
type SourceConfig struct {
	// Name is the source's name: in property keys, the origin header and
	// ${source} of topic.rename.
	Name string
	// Brokers is source.NAME.bootstrap.servers.
	Brokers []string
	// Security is source.NAME.security.protocol, source.NAME.ssl.* and
	// source.NAME.sasl.* (network.SecurityFromProperties).
	Security network.Security
	// ZooKeeperConnect is source.NAME.zookeeper.connect: when set, the
	// source is consumed by the paper's ZooKeeper consumer groups
	// (client.GroupConsumer) instead of the brokers' group coordinator.
	ZooKeeperConnect string
	// Coordinator, when set, opens the ZooKeeper-group sessions instead of
	// ZooKeeperConnect (e.g. an in-process memcoord cluster).
	Coordinator coord.SessionFactory
}

// zkGroups reports whether the source uses the ZooKeeper consumer groups.
func (s SourceConfig) zkGroups() bool { return s.ZooKeeperConnect != "" || s.Coordinator != nil }

// Config configures a Mirror. Zero values mean the defaults above; the
// comments name the property of `tributary mirror --config` for each field.
type Config struct {
	Sources []SourceConfig
	// TargetName is target.name: the cluster name audit events carry.
	TargetName string
	// TargetBrokers is target.bootstrap.servers.
	TargetBrokers []string
	// ClientID is client.id (default DefaultClientID): the client id of
	// the mirror's Kafka-group consumers, its target producer and its
	// audit publisher, which client quotas (kafka-configs --entity-type
	// clients) name.
	ClientID string
	// TargetSecurity is target.security.protocol, target.ssl.* and
	// target.sasl.*: the target's producer and the audit publisher.
	TargetSecurity network.Security
	// Topics is topics: a regular expression over whole topic names.
	Topics string
	// TopicsExclude is topics.exclude: names matching it are not mirrored.
	TopicsExclude string
	// GroupID is group.id, the consumer group on every source.
	GroupID string
	// TopicRename is topic.rename: the target topic's name, with ${source}
	// and ${topic} replaced. Default "${topic}" (the same name).
	TopicRename string
	// ReplicationPolicy is replication.policy.class: DefaultReplicationPolicy
	// or IdentityReplicationPolicy (MirrorMaker 2's class names); empty
	// means topic.rename. ReplicationSeparator is
	// replication.policy.separator (default ".").
	ReplicationPolicy    string
	ReplicationSeparator string
	// Checkpoints is emit.checkpoints.enabled (default: on with a
	// replication policy, off otherwise): the mirror records its offset
	// syncs on the target and, every CheckpointInterval
	// (emit.checkpoints.interval.seconds, default 60 s), translates the
	// committed offsets of the source groups matching Groups (groups,
	// default ".*") and not GroupsExclude (groups.exclude) into
	// "<source>.checkpoints.internal" (checkpoint.go).
	Checkpoints        *bool
	CheckpointInterval time.Duration
	Groups             string
	GroupsExclude      string
	// SyncGroupOffsets is sync.group.offsets.enabled (KIP-545): the
	// translated offsets are also committed to the target's group of the
	// same name while it has no active member.
	SyncGroupOffsets bool
	// TopicRefreshInterval is topic.refresh.interval.ms: how often sources
	// are listed for new topics.
	TopicRefreshInterval time.Duration
	// TargetReplicationFactor is target.replication.factor for topics the
	// mirror creates; 0 means the target broker's default.
	TargetReplicationFactor int16
	// CommitInterval is offset.commit.interval.ms.
	CommitInterval time.Duration
	// AutoOffsetReset is auto.offset.reset for partitions without a
	// committed offset: "earliest" (default) or "latest".
	AutoOffsetReset string
	// BufferRecords and BufferBytes are buffer.max.records and
	// buffer.memory: records sent to the target and not yet acknowledged.
	// When either is reached, fetching stops (back-pressure).
	BufferRecords int
	BufferBytes   int64
	// Linger, BatchBytes and Compression are producer.linger.ms,
	// producer.batch.size and producer.compression.type. Linger zero is
	// the default (DefaultLinger); NoLinger (producer.linger.ms=0) sends
	// each batch at once.
	Linger      time.Duration
	BatchBytes  int32
	Compression string
	// FetchMaxBytes, FetchPartitionBytes and FetchMaxWait are
	// consumer.fetch.max.bytes, consumer.max.partition.fetch.bytes and
	// consumer.fetch.max.wait.ms.
	FetchMaxBytes       int32
	FetchPartitionBytes int32
	FetchMaxWait        time.Duration
	// QueuedChunks is consumer.queued.max.message.chunks (ZooKeeper groups):
	// fetched chunks held per stream.
	QueuedChunks int
	// RebalanceBackoff and ZooKeeperSessionTimeout are rebalance.backoff.ms
	// and zookeeper.session.timeout.ms of the ZooKeeper groups.
	RebalanceBackoff        time.Duration
	ZooKeeperSessionTimeout time.Duration
	// ShutdownTimeout is shutdown.timeout.ms: how long a stop waits for the
	// target to acknowledge what is in flight before committing.
	ShutdownTimeout time.Duration
	// StoppedRetry is stopped.partition.retry.ms: how long a partition the
	// target refused a record of stays stopped before the source's
	// consumer restarts from its committed offsets and tries that record
	// again (an ACL granted, max.message.bytes raised meanwhile);
	// NoStoppedRetry never (until the process restarts).
	StoppedRetry time.Duration
	// AuditDisable is audit.enable=false. AuditWindow and AuditInterval are
	// audit.window.ms and audit.interval.ms.
	AuditDisable  bool
	AuditWindow   time.Duration
	AuditInterval time.Duration
	// ExactlyOnce is exactly.once=true: each source is mirrored in target
	// transactions that hold the records, their source offsets (stored on
	// the target) and their audit counts (eos.go).
	ExactlyOnce bool
	// TransactionalIDPrefix is transactional.id.prefix (default group.id):
	// source NAME's producer is transactional.id "<prefix>-NAME".
	TransactionalIDPrefix string
	// TransactionTimeout is transaction.timeout.ms (default
	// DefaultTransactionTimeout).
	TransactionTimeout time.Duration
	// Instance names this process in audit events and group member ids.
	Instance string
	// Logger and Registerer are injected; nil discards.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Validate checks the configuration; each error names its property.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if len(c.Sources) == 0 {
		bad("no source: set source.NAME.bootstrap.servers")
	}
	seen := map[string]bool{}
	for _, s := range c.Sources {
		switch {
		case !sourceName.MatchString(s.Name):
			bad("source name %q: want letters, digits, '.', '_' or '-'", s.Name)
		case seen[s.Name]:
			bad("source %q configured twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.Brokers) == 0 {
			bad("source.%s.bootstrap.servers is required", s.Name)
		}
	}
	if len(c.TargetBrokers) == 0 {
		bad("target.bootstrap.servers is required")
	}
	if c.TargetName != "" && !sourceName.MatchString(c.TargetName) {
		bad("target.name %q: want letters, digits, '.', '_' or '-'", c.TargetName)
	}
	if c.Topics == "" {
		bad("topics is required (a regular expression over topic names)")
	} else if _, err := regexp.Compile(c.Topics); err != nil {
		bad("topics: %v", err)
	}
	if _, err := regexp.Compile(c.TopicsExclude); err != nil {
		bad("topics.exclude: %v", err)
	}
	if c.GroupID == "" {
		bad("group.id is required")
	} else if strings.Contains(c.GroupID, "/") {
		bad("group.id %q contains '/'", c.GroupID)
	}
	switch c.ReplicationPolicy {
	case "", DefaultReplicationPolicy, IdentityReplicationPolicy:
	default:
		bad("replication.policy.class %q: want %s or %s", c.ReplicationPolicy, DefaultReplicationPolicy, IdentityReplicationPolicy)
	}
	if c.ReplicationPolicy != "" && c.TopicRename != "" {
		bad("topic.rename and replication.policy.class are both set: set one")
	}
	if c.ReplicationSeparator != "" && c.ReplicationPolicy != DefaultReplicationPolicy {
		bad("replication.policy.separator is set without replication.policy.class=%s", DefaultReplicationPolicy)
	}
	if strings.Contains(c.ReplicationSeparator, "/") {
		bad("replication.policy.separator %q contains '/'", c.ReplicationSeparator)
	}
	if _, err := regexp.Compile(c.Groups); err != nil {
		bad("groups: %v", err)
	}
	if _, err := regexp.Compile(c.GroupsExclude); err != nil {
		bad("groups.exclude: %v", err)
	}
	if c.CheckpointInterval < 0 {
		bad("emit.checkpoints.interval.seconds: must be >= 1")
	}
	if c.ExactlyOnce && c.Checkpoints != nil && *c.Checkpoints {
		bad("emit.checkpoints.enabled=true cannot be combined with exactly.once=true (not supported yet)")
	}
	if c.SyncGroupOffsets && !c.checkpoints() {
		bad("sync.group.offsets.enabled=true needs emit.checkpoints.enabled (on by default with replication.policy.class)")
	}
	if c.TopicRename != "" {
		if !strings.Contains(c.TopicRename, "${topic}") {
			bad("topic.rename %q: must contain ${topic}", c.TopicRename)
		}
		rest := strings.NewReplacer("${topic}", "", "${source}", "").Replace(c.TopicRename)
		if strings.Contains(rest, "${") {
			bad("topic.rename %q: only ${source} and ${topic} are known", c.TopicRename)
		}
	}
	switch strings.ToLower(c.AutoOffsetReset) {
	case "", "earliest", "smallest", "latest", "largest":
	default:
		bad("auto.offset.reset %q: want earliest or latest", c.AutoOffsetReset)
	}
	switch strings.ToLower(c.Compression) {
	case "", "none", "gzip", "snappy", "lz4", "zstd":
	default:
		bad("producer.compression.type %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"topic.refresh.interval.ms", c.TopicRefreshInterval},
		{"offset.commit.interval.ms", c.CommitInterval},
		{"producer.linger.ms", max(c.Linger, 0)}, // NoLinger is < 0
		{"consumer.fetch.max.wait.ms", c.FetchMaxWait},
		{"rebalance.backoff.ms", c.RebalanceBackoff},
		{"zookeeper.session.timeout.ms", c.ZooKeeperSessionTimeout},
		{"shutdown.timeout.ms", c.ShutdownTimeout},
		{"audit.window.ms", c.AuditWindow},
		{"audit.interval.ms", c.AuditInterval},
		{"transaction.timeout.ms", c.TransactionTimeout},
	} {
		if d.v < 0 {
			bad("%s: must be >= 0", d.key)
		}
	}
	if c.StoppedRetry < 0 && c.StoppedRetry != NoStoppedRetry {
		bad("stopped.partition.retry.ms: must be >= 1, or -1 for never")
	}
	for _, n := range []struct {
		key string
		v   int64
	}{
		{"buffer.max.records", int64(c.BufferRecords)},
		{"buffer.memory", c.BufferBytes},
		{"producer.batch.size", int64(c.BatchBytes)},
		{"consumer.fetch.max.bytes", int64(c.FetchMaxBytes)},
		{"consumer.max.partition.fetch.bytes", int64(c.FetchPartitionBytes)},
		{"consumer.queued.max.message.chunks", int64(c.QueuedChunks)},
		{"target.replication.factor", int64(c.TargetReplicationFactor)},
	} {
		if n.v < 0 {
			bad("%s: must be >= 0", n.key)
		}
	}
	errs = append(errs, c.validateExactlyOnce()...)
	return errors.Join(errs...)
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	or := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.TargetName == "" {
		c.TargetName = DefaultTargetName
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.TopicRename == "" && c.ReplicationPolicy == "" {
		c.TopicRename = DefaultTopicRename
	}
	or(&c.CheckpointInterval, DefaultCheckpointInterval)
	if c.Groups == "" {
		c.Groups = DefaultGroups
	}
	if c.GroupsExclude == "" {
		c.GroupsExclude = DefaultGroupsExclude
	}
	or(&c.TopicRefreshInterval, DefaultTopicRefreshInterval)
	or(&c.CommitInterval, DefaultCommitInterval)
	or(&c.Linger, DefaultLinger)
	or(&c.FetchMaxWait, DefaultFetchMaxWait)
	or(&c.RebalanceBackoff, DefaultRebalanceBackoff)
	or(&c.ZooKeeperSessionTimeout, DefaultZooKeeperSession)
	or(&c.ShutdownTimeout, DefaultShutdownTimeout)
	or(&c.StoppedRetry, DefaultStoppedRetry)
	or(&c.TransactionTimeout, DefaultTransactionTimeout)
	if c.TransactionalIDPrefix == "" {
		c.TransactionalIDPrefix = c.GroupID
	}
	if c.AutoOffsetReset == "" {
		c.AutoOffsetReset = DefaultAutoOffsetReset
	}
	if c.BufferRecords == 0 {
		c.BufferRecords = DefaultBufferRecords
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = DefaultBufferBytes
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.FetchPartitionBytes == 0 {
		c.FetchPartitionBytes = DefaultFetchPartitionBytes
	}
	if c.QueuedChunks == 0 {
		c.QueuedChunks = DefaultQueuedChunks
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

// checkpoints reports whether offset syncs and checkpoints are emitted.
func (c Config) checkpoints() bool {
	if c.Checkpoints != nil {
		return *c.Checkpoints
	}
	return c.ReplicationPolicy != "" && !c.ExactlyOnce
}

// resetEarliest reports whether auto.offset.reset starts at the beginning.
func (c Config) resetEarliest() bool {
	switch strings.ToLower(c.AutoOffsetReset) {
	case "latest", "largest":
		return false
	}
	return true
}

// Keys lists the properties ConfigFromProperties reads besides the
// source.NAME.* ones (source.NAME.bootstrap.servers,
// source.NAME.zookeeper.connect and source.NAME. before each of
// network.SecurityKeys); metrics.listen is the command's.
var Keys = append(prefixed("target.", network.SecurityKeys),
	"target.name", "target.bootstrap.servers", "target.replication.factor", "client.id",
	"topics", "topics.exclude", "group.id", "topic.rename", "topic.refresh.interval.ms",
	"replication.policy.class", "replication.policy.separator",
	"emit.checkpoints.enabled", "emit.checkpoints.interval.seconds", "groups", "groups.exclude",
	"sync.group.offsets.enabled",
	"offset.commit.interval.ms", "auto.offset.reset",
	"buffer.max.records", "buffer.memory",
	"producer.linger.ms", "producer.batch.size", "producer.compression.type",
	"consumer.fetch.max.bytes", "consumer.max.partition.fetch.bytes", "consumer.fetch.max.wait.ms",
	"consumer.queued.max.message.chunks", "rebalance.backoff.ms", "zookeeper.session.timeout.ms",
	"shutdown.timeout.ms", "stopped.partition.retry.ms", "audit.enable", "audit.window.ms", "audit.interval.ms",
	"exactly.once", "transactional.id.prefix", "transaction.timeout.ms",
	"metrics.listen", "instance",
)

func prefixed(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

// ConfigFromProperties builds a Config from properties (as read by
// internal/properties). Unknown keys are returned, sorted, for the caller
// to warn about; every malformed value is an error naming its key (all of
// them at once). A key given is taken literally: 0 where 0 is not allowed
// is refused, not read as the default. The result still needs Validate.
func ConfigFromProperties(props map[string]string) (Config, []string, error) {
	var c Config
	p := properties.New(props)
	sources := map[string]*SourceConfig{}
	for _, k := range p.Keys() {
		rest, ok := strings.CutPrefix(k, "source.")
		if !ok {
			continue
		}
		name, field, _ := cutLast(rest)
		if name == "" {
			continue
		}
		s := sources[name]
		if s == nil {
			s = &SourceConfig{Name: name}
			sources[name] = s
		}
		if field == "bootstrap.servers" {
			s.Brokers = p.List(k)
		} else {
			s.ZooKeeperConnect = p.String(k)
		}
	}
	var secErrs []error
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		s := sources[name]
		var err error
		if s.Security, err = network.SecurityFromProperties(p, "source."+name+"."); err != nil {
			secErrs = append(secErrs, err)
		}
		c.Sources = append(c.Sources, *s)
	}
	ms := func(key string) time.Duration { return p.Duration(key, time.Millisecond, 1) }
	c.TargetName = p.String("target.name")
	c.TargetBrokers = p.List("target.bootstrap.servers")
	c.ClientID = p.String("client.id")
	if sec, err := network.SecurityFromProperties(p, "target."); err != nil {
		secErrs = append(secErrs, err)
	} else {
		c.TargetSecurity = sec
	}
	if v, ok := p.Lookup("target.replication.factor"); ok {
		// Kafka's -1 is the target broker's default, our zero.
		n, err := properties.ParseInt(v, 16, -1)
		if err == nil && n == 0 {
			err = errors.New("must be >= 1, or -1 for the target broker's default")
		}
		if err != nil {
			p.Reject("target.replication.factor", err)
		}
		c.TargetReplicationFactor = int16(max(n, 0))
	}
	c.Topics = p.String("topics")
	c.TopicsExclude = p.String("topics.exclude")
	c.GroupID = p.String("group.id")
	c.TopicRename = p.String("topic.rename")
	c.ReplicationPolicy = p.String("replication.policy.class")
	c.ReplicationSeparator = p.String("replication.policy.separator")
	if _, ok := p.Lookup("emit.checkpoints.enabled"); ok {
		on := p.Bool("emit.checkpoints.enabled", false)
		c.Checkpoints = &on
	}
	c.CheckpointInterval = p.Duration("emit.checkpoints.interval.seconds", time.Second, 1)
	c.Groups = p.String("groups")
	c.GroupsExclude = p.String("groups.exclude")
	c.SyncGroupOffsets = p.Bool("sync.group.offsets.enabled", false)
	c.TopicRefreshInterval = ms("topic.refresh.interval.ms")
	c.CommitInterval = ms("offset.commit.interval.ms")
	c.AutoOffsetReset = p.String("auto.offset.reset")
	c.BufferRecords = p.Int("buffer.max.records", 1)
	c.BufferBytes = p.Size("buffer.memory", 1)
	if c.Linger = p.Duration("producer.linger.ms", time.Millisecond, 0); c.Linger == 0 {
		if _, set := p.Lookup("producer.linger.ms"); set {
			c.Linger = NoLinger
		}
	}
	c.BatchBytes = int32(p.Size("producer.batch.size", 1))
	c.Compression = p.String("producer.compression.type")
	c.FetchMaxBytes = p.Int32("consumer.fetch.max.bytes", 1)
	c.FetchPartitionBytes = p.Int32("consumer.max.partition.fetch.bytes", 1)
	c.FetchMaxWait = ms("consumer.fetch.max.wait.ms")
	c.QueuedChunks = p.Int("consumer.queued.max.message.chunks", 1)
	c.RebalanceBackoff = ms("rebalance.backoff.ms")
	c.ZooKeeperSessionTimeout = ms("zookeeper.session.timeout.ms")
	c.ShutdownTimeout = ms("shutdown.timeout.ms")
	if v, ok := p.Lookup("stopped.partition.retry.ms"); ok {
		n, err := properties.ParseInt(v, 64, -1)
		if err == nil && n == 0 {
			err = errors.New("must be >= 1, or -1 for never")
		}
		if err != nil {
			p.Reject("stopped.partition.retry.ms", err)
		}
		if c.StoppedRetry = time.Duration(n) * time.Millisecond; n < 0 {
			c.StoppedRetry = NoStoppedRetry
		}
	}
	c.AuditDisable = !p.Bool("audit.enable", true)
	c.AuditWindow = ms("audit.window.ms")
	c.AuditInterval = ms("audit.interval.ms")
	c.ExactlyOnce = p.Bool("exactly.once", false)
	c.TransactionalIDPrefix = p.String("transactional.id.prefix")
	c.TransactionTimeout = ms("transaction.timeout.ms")
	c.Instance = p.String("instance")
	for _, k := range p.Keys() {
		if strings.HasPrefix(k, "metrics.") { // metrics.listen, .ssl.*, .authentication.*: the command's
			p.Ignore(k)
		}
	}
	if err := errors.Join(append([]error{p.Err()}, secErrs...)...); err != nil {
		return c, p.Unknown(), fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c, p.Unknown(), nil
}

// cutLast splits "NAME.bootstrap.servers" into the source name and its
// field; a name may itself contain dots.
func cutLast(rest string) (name, field string, ok bool) {
	for _, f := range []string{"bootstrap.servers", "zookeeper.connect"} {
		if n, ok := strings.CutSuffix(rest, "."+f); ok {
			return n, f, true
		}
	}
	return "", "", false
}
