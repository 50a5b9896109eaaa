package loader

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/hours"
	"github.com/tributary/tributary/icetable"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
)

// The values of isolation.level.
const (
	ReadCommitted   = "read_committed"
	ReadUncommitted = "read_uncommitted"
)

// The values of table.format.
const (
	// FormatAvro writes Avro container files under the output (the default).
	FormatAvro = "avro"
	// FormatIceberg commits to one Apache Iceberg table per topic (icetable).
	FormatIceberg = "iceberg"
)

// Defaults.
const (
	DefaultCommitRecords    = 1_000_000
	DefaultCommitInterval   = time.Minute
	DefaultMaxOpenFiles     = 64
	DefaultZKSessionTimeout = 6 * time.Second
	DefaultScaleWait        = 30 * time.Second
	DefaultAuditWindow      = 10 * time.Minute
	// DefaultClientID is client.id's default.
	DefaultClientID   = "tributary-loader"
	DefaultAuditTopic = "__audit"
)

// Config configures a Loader. Zero values mean the defaults; Validate
// checks it. The properties file keys are given with each field.
type Config struct {
	// Name is the job's name (`name`): its offsets and manifests are kept
	// under <base>/_loader/<name>. Required.
	Name string
	// Brokers are the bootstrap servers (`bootstrap.servers`). Required.
	Brokers []string
	// ClientID is `client.id` (default DefaultClientID): the client id of
	// the loader's consumers and audit publisher, which client quotas
	// (kafka-configs --entity-type clients) name.
	ClientID string
	// Security is `security.protocol`, `ssl.*` and `sasl.*`
	// (network.SecurityFromProperties): how the loader reaches Brokers.
	Security network.Security
	// RegistryURL is the schema registry (`schema.registry.url`). Required.
	RegistryURL string
	// Registry is the registry client's credentials and TLS
	// (`basic.auth.user.info`, `schema.registry.ssl.*`: serde.ClientKeys);
	// its URL is RegistryURL's.
	Registry serde.ClientConfig
	// Topics is a regular expression over whole topic names (`topics`).
	// Internal topics ("__" prefix) are never loaded. Required.
	Topics string
	// OutputURI is where files go (`output.uri`): hdfs://host:port/base,
	// file:///abs/base or a path. Required.
	OutputURI string
	// HDFS holds the client settings of an hdfs:// OutputURI beyond the
	// URI: Kerberos and data transfer protection (the keys of
	// filesys.HDFSKeys, see filesys.HDFSOptionsFromProperties).
	HDFS filesys.HDFSOptions
	// Codec is the container files' block codec (`codec`): deflate
	// (default), snappy or null.
	Codec string
	// CommitRecords commits a partition every this many records
	// (`commit.records`), bounding the work a crash redoes and the size of
	// a commit's files.
	CommitRecords int64
	// CommitInterval is, for Serve, the time between load cycles, each of
	// which commits (`commit.interval.ms`).
	CommitInterval time.Duration
	// PartitionDuration is partition.duration.ms (kafka-connect-hdfs's
	// TimeBasedPartitioner): the length of the time partitions records go
	// to by their timestamps, default an hour (package hours: a sub-hour
	// duration adds a /<mm> level; a topic's duration is fixed by its
	// first load).
	PartitionDuration time.Duration
	// PathFormat is path.format (kafka-connect-hdfs's TimeBasedPartitioner
	// spelling, a Joda-style pattern such as 'dt'=YYYY-MM-dd/'hr'=HH; see
	// package hours): the partition directories below <base>/<topic>.
	// Empty is the default <yyyy>/<MM>/<dd>/<HH> layout. Fixed by the
	// topic's first load, like the duration.
	PathFormat string
	// Timezone is `timezone`: partitions are formatted and aligned in UTC,
	// the only zone supported (default UTC).
	Timezone string
	// Locale is `locale`, accepted for kafka-connect-hdfs configurations:
	// the pattern's fields are all numeric, so it changes nothing.
	Locale string
	// StoreKeys, StoreHeaders and StoreCoordinates (`store.kafka.keys`,
	// `store.kafka.headers`, `store.kafka.coordinates`) append the record
	// key, its headers and its topic, partition and offset to every loaded
	// record as columns (hours.Stored); a value schema with a field of a
	// column's name makes its records bad records. Fixed by the topic's
	// first load.
	StoreKeys, StoreHeaders, StoreCoordinates bool
	// MaxOpenFiles bounds the files a partition keeps open at once
	// (`max.open.files`); past it the least recently used one is closed
	// (the next record of its hour and schema starts a new file).
	MaxOpenFiles int
	// IsolationLevel is the consumer's `isolation.level` (Kafka's key):
	// "read_committed" (the default: records of aborted transactions never
	// land, and a run's end offsets are the last stable offsets) or
	// "read_uncommitted" (every record up to the high watermark, aborted
	// ones included, as a Kafka consumer's default).
	IsolationLevel string

	// ZooKeeperConnect, when set, splits the partitions between the
	// loader processes of the job through ZooKeeper (`zookeeper.connect`,
	// host:port[,...][/chroot]).
	ZooKeeperConnect string
	// ZKSessionTimeout (`zookeeper.session.timeout.ms`): how long a killed
	// loader keeps its partitions.
	ZKSessionTimeout time.Duration
	// ScaleMembers (`scale.members`): a run waits, up to ScaleWait
	// (`scale.wait.ms`), until this many processes of the job registered
	// before it splits the partitions. Default 1.
	ScaleMembers int
	ScaleWait    time.Duration

	// AuditDisable turns audit events off (`audit.enable=false`).
	AuditDisable bool
	// AuditCluster names the cluster the loaded records are in
	// (`audit.cluster`), default "analytics".
	AuditCluster string
	// AuditBrokers (`audit.bootstrap.servers`): where the audit topic is,
	// default Brokers.
	AuditBrokers []string
	// AuditSecurity (`audit.security.protocol`, `audit.ssl.*`,
	// `audit.sasl.*`): how the audit publisher reaches AuditBrokers; nil
	// (none of those keys) means Security.
	AuditSecurity *network.Security
	// AuditTopic (`audit.topic`), default __audit.
	AuditTopic string
	// AuditWindow (`audit.window.ms`), default 10 minutes.
	AuditWindow time.Duration

	// Instance names this process in logs and ZooKeeper, default host:pid.
	Instance string
	// Logger, default slog.Default().
	Logger *slog.Logger
	// Registerer receives the loader's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// TableFormat is `table.format`: FormatAvro (the default, container
	// files under OutputURI) or FormatIceberg (one Iceberg table per topic,
	// committed with the offsets; see doc.go). OutputURI still holds the
	// job's state and the _errors files.
	TableFormat string
	// Iceberg is the catalog of FormatIceberg (the `iceberg.*` keys of
	// icetable.Keys, Kafka Connect's Iceberg sink's names).
	Iceberg icetable.Config

	// CrashAt is a test hook (not a property): see CrashPoint. Zero is off.
	CrashAt CrashPoint
}

var localeRE = regexp.MustCompile(`^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$`)

// layout is the topic layout the configuration writes (after fill).
func (c Config) layout() hours.Layout {
	l, err := hours.NewLayout(c.PartitionDuration, c.PathFormat)
	if err != nil {
		panic(err) // Validate checked it
	}
	l.Stored = hours.Stored{Keys: c.StoreKeys, Headers: c.StoreHeaders, Coordinates: c.StoreCoordinates}
	return l
}

// Validate checks the configuration; errors name the property key.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Name == "":
		return bad("name is required")
	case strings.ContainsAny(c.Name, "/\\") || strings.HasPrefix(c.Name, ".") || strings.HasPrefix(c.Name, "_"):
		return bad("name %q: no slashes, no leading '.' or '_'", c.Name)
	case len(c.Brokers) == 0:
		return bad("bootstrap.servers is required")
	case c.RegistryURL == "":
		return bad("schema.registry.url is required")
	case c.Topics == "":
		return bad("topics is required")
	case c.OutputURI == "":
		return bad("output.uri is required")
	case c.CommitRecords < 0:
		return bad("commit.records must be positive")
	case c.CommitInterval < 0:
		return bad("commit.interval.ms must be positive")
	case c.MaxOpenFiles < 0:
		return bad("max.open.files must be positive")
	case c.IsolationLevel != "" && c.IsolationLevel != ReadCommitted && c.IsolationLevel != ReadUncommitted:
		return bad("isolation.level %q: want %s or %s", c.IsolationLevel, ReadCommitted, ReadUncommitted)
	case c.ScaleMembers < 0:
		return bad("scale.members must be positive")
	case c.AuditWindow < 0:
		return bad("audit.window.ms must be positive")
	}
	if c.PartitionDuration != 0 {
		if err := hours.ValidDuration(c.PartitionDuration); err != nil {
			return bad("partition.duration.ms: %v", err)
		}
	}
	if c.PathFormat != "" {
		d := c.PartitionDuration
		if d == 0 {
			d = time.Hour
		}
		if _, err := hours.NewLayout(d, c.PathFormat); err != nil {
			return bad("path.format: %v", err)
		}
	}
	switch c.Timezone {
	case "", "UTC", "Etc/UTC", "GMT", "Etc/GMT":
	default:
		return bad("timezone %q: only UTC is supported (partitions are aligned and named in UTC)", c.Timezone)
	}
	if c.Locale != "" && !localeRE.MatchString(c.Locale) {
		return bad("locale %q: want a language tag such as en-US or en_US", c.Locale)
	}
	if _, err := regexp.Compile(c.Topics); err != nil {
		return bad("topics: %v", err)
	}
	if _, err := properties.ParseURI(c.OutputURI); err != nil {
		return bad("output.uri %q: %v", c.OutputURI, err)
	}
	if _, err := properties.ParseURI(c.RegistryURL); err != nil {
		return bad("schema.registry.url %q: %v", c.RegistryURL, err)
	}
	if _, err := parseCodec(c.Codec); err != nil {
		return err
	}
	if err := c.HDFS.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c.validateFormat()
}

// validateFormat checks table.format and, for iceberg, the catalog keys
// and the keys that only shape Avro files.
func (c Config) validateFormat() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch c.TableFormat {
	case "", FormatAvro:
		return nil
	case FormatIceberg:
	default:
		return bad("table.format=%q: want %s or %s", c.TableFormat, FormatAvro, FormatIceberg)
	}
	// icetable defaults the type to sql; the loader asks for it, so that a
	// job meant for a Hive catalog never writes a SQLite file by mistake.
	if c.Iceberg.Type == "" {
		return bad("iceberg.catalog.type is required with table.format=iceberg: want %s or %s", icetable.CatalogSQL, icetable.CatalogHive)
	}
	ic := c.Iceberg
	if err := ic.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.PathFormat != "":
		return bad("path.format: not used with table.format=iceberg (tables are partitioned by iceberg.tables.default-partition-by)")
	case c.PartitionDuration != 0 && c.PartitionDuration != time.Hour:
		return bad("partition.duration.ms: not used with table.format=iceberg (tables are partitioned by hours)")
	case c.StoreKeys || c.StoreHeaders || c.StoreCoordinates:
		return bad("store.kafka.*: not used with table.format=iceberg (the _kafka column holds partition, offset and timestamp)")
	}
	return nil
}

func (c *Config) fill() {
	if c.CommitRecords == 0 {
		c.CommitRecords = DefaultCommitRecords
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if c.IsolationLevel == "" {
		c.IsolationLevel = ReadCommitted
	}
	if c.PartitionDuration == 0 {
		c.PartitionDuration = time.Hour
	}
	if c.ZKSessionTimeout == 0 {
		c.ZKSessionTimeout = DefaultZKSessionTimeout
	}
	if c.ScaleMembers == 0 {
		c.ScaleMembers = 1
	}
	if c.ScaleWait == 0 {
		c.ScaleWait = DefaultScaleWait
	}
	if c.AuditCluster == "" {
		c.AuditCluster = "analytics"
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if len(c.AuditBrokers) == 0 {
		c.AuditBrokers = c.Brokers
	}
	if c.AuditSecurity == nil {
		s := c.Security
		c.AuditSecurity = &s
	}
	if c.AuditTopic == "" {
		c.AuditTopic = DefaultAuditTopic
	}
	if c.AuditWindow == 0 {
		c.AuditWindow = DefaultAuditWindow
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Keys lists every property ConfigFromProperties reads: its own,
// network.SecurityKeys bare and under audit, and filesys.HDFSKeys.
var Keys = slices.Concat(network.SecurityKeys, auditSecurityKeys, filesys.HDFSKeys, []string{
	"name", "bootstrap.servers", "client.id", "schema.registry.url", "topics", "output.uri", "codec",
	"commit.records", "commit.interval.ms", "max.open.files", "isolation.level", "partition.duration.ms",
	"path.format", "timezone", "locale", "store.kafka.keys", "store.kafka.headers", "store.kafka.coordinates",
	"zookeeper.connect", "zookeeper.session.timeout.ms", "scale.members", "scale.wait.ms",
	"audit.enable", "audit.cluster", "audit.bootstrap.servers", "audit.topic", "audit.window.ms",
	"table.format",
}, icetable.Keys)

var auditSecurityKeys = func() []string {
	out := make([]string, len(network.SecurityKeys))
	for i, k := range network.SecurityKeys {
		out[i] = "audit." + k
	}
	return out
}()

func init() { Keys = append(Keys, serde.ClientKeys[1:]...) } // [0] is schema.registry.url

// ConfigFromProperties builds a Config from properties-file keys (read by
// internal/properties; values trimmed). Unknown keys are returned, sorted,
// for the caller to warn about. Every malformed value is an error naming
// its key, all at once; a key given is taken literally (0 is refused, not
// read as the default). The result is validated.
func ConfigFromProperties(props map[string]string) (Config, []string, error) {
	var c Config
	p := properties.New(props)
	ms := func(key string) time.Duration { return p.Duration(key, time.Millisecond, 1) }
	c.Name = p.String("name")
	c.Brokers = p.List("bootstrap.servers")
	c.ClientID = p.String("client.id")
	c.Registry = serde.ClientConfigFromProperties(p, "")
	c.RegistryURL = c.Registry.URL
	c.Topics = p.String("topics")
	c.OutputURI = p.URI("output.uri")
	c.Codec = p.String("codec")
	c.HDFS = filesys.HDFSOptionsFromProperties(p)
	c.CommitRecords = p.Int64("commit.records", 1)
	c.CommitInterval = ms("commit.interval.ms")
	c.MaxOpenFiles = p.Int("max.open.files", 1)
	c.IsolationLevel = p.String("isolation.level")
	c.PartitionDuration = ms("partition.duration.ms")
	c.PathFormat = p.String("path.format")
	c.Timezone = p.String("timezone")
	c.Locale = p.String("locale")
	c.StoreKeys = p.Bool("store.kafka.keys", false)
	c.StoreHeaders = p.Bool("store.kafka.headers", false)
	c.StoreCoordinates = p.Bool("store.kafka.coordinates", false)
	c.ZooKeeperConnect = p.String("zookeeper.connect")
	c.ZKSessionTimeout = ms("zookeeper.session.timeout.ms")
	c.ScaleMembers = p.Int("scale.members", 1)
	c.ScaleWait = ms("scale.wait.ms")
	c.AuditDisable = !p.Bool("audit.enable", true)
	c.AuditCluster = p.String("audit.cluster")
	c.AuditBrokers = p.List("audit.bootstrap.servers")
	c.AuditTopic = p.String("audit.topic")
	c.AuditWindow = ms("audit.window.ms")
	c.TableFormat = strings.ToLower(p.String("table.format"))
	if c.TableFormat == FormatIceberg || slices.ContainsFunc(icetable.Keys, func(k string) bool { _, ok := props[k]; return ok }) {
		c.Iceberg = icetable.FromProperties(p)
	}
	var secErr error
	c.Security, secErr = network.SecurityFromProperties(p, "")
	if slices.ContainsFunc(auditSecurityKeys, func(k string) bool { _, ok := props[k]; return ok }) {
		as, err := network.SecurityFromProperties(p, "audit.")
		c.AuditSecurity, secErr = &as, errors.Join(secErr, err)
	}
	unknown := p.Unknown()
	if err := errors.Join(p.Err(), secErr); err != nil {
		return c, unknown, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c, unknown, c.Validate()
}
