package pipeline

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/filesys"
)

// Defaults.
const (
	// DefaultZooKeeperRoot is the chroot under which each cluster gets
	// its own (<root>/dc1, <root>/dc2, <root>/analytics) when ZooKeeper is
	// given without a chroot.
	DefaultZooKeeperRoot = "/tributary-pipeline"
	// DefaultHDFSPath is the output directory on HDFS.
	DefaultHDFSPath = "/tributary-pipeline/data"
	// DefaultRate is each datacenter's page views per second.
	DefaultRate = 50
	// DefaultAuditWindow is the audit window of the pipeline: short, so
	// that windows close while one watches.
	DefaultAuditWindow = time.Minute
	// DefaultAuditInterval is how often the tiers publish their counts.
	DefaultAuditInterval = 2 * time.Second
	// DefaultLoadInterval is the time between loader runs.
	DefaultLoadInterval = 10 * time.Second
	// DefaultPartitions is the partition count of the page-view topic.
	DefaultPartitions = 4
	// DefaultBrokers is the broker count of each cluster.
	DefaultBrokers = 2
	// AnalyticsCluster names the cluster the mirror writes to.
	AnalyticsCluster = "analytics"
	// LoaderJob is the loader job's name (its state is under
	// <output>/_loader/<LoaderJob>).
	LoaderJob = "pageviews-hourly"
)

// DefaultDatacenters are the online clusters.
var DefaultDatacenters = []string{"dc1", "dc2"}

// Config describes a pipeline. Zero values mean defaults, except Dir.
type Config struct {
	// Dir holds every cluster's data (<Dir>/<cluster>/broker-<id>) and,
	// without HDFS, the loaded files (<Dir>/data). Required.
	Dir string
	// Datacenters names the online clusters; default DefaultDatacenters.
	Datacenters []string
	// Brokers is the broker count of each cluster; default DefaultBrokers.
	Brokers int
	// Partitions of the page-view topic; default DefaultPartitions.
	Partitions int32
	// Host is the address everything listens on; default 127.0.0.1.
	Host string
	// Port, when set, is the first broker port: cluster i (dc1, dc2, ...,
	// analytics last) uses Port+100*i onwards. 0 picks free ports.
	Port int
	// RegistryAddr is the schema registry's listen address; default
	// "<Host>:0" (a free port).
	RegistryAddr string
	// DashboardAddr is the audit service's listen address; default
	// "<Host>:0".
	DashboardAddr string
	// ZooKeeper switches coordination from in-process to ZooKeeper:
	// "host:port[,host:port][/chroot]"; each cluster uses
	// <chroot>/<cluster> (chroot default DefaultZooKeeperRoot).
	ZooKeeper string
	// HDFS switches the loader's output to HDFS: "host:port"; files go
	// under HDFSPath.
	HDFS string
	// HDFSPath is the output directory on HDFS; default DefaultHDFSPath.
	HDFSPath string
	// HDFSOptions reach a Kerberized HDFS (the loader's HDFS keys).
	HDFSOptions filesys.HDFSOptions
	// Topic is the page-view topic; default DefaultTopic.
	Topic string
	// Rate is each datacenter's page views per second; default
	// DefaultRate. Negative means no producers.
	Rate float64
	// AuditWindow is the audit window; default DefaultAuditWindow.
	AuditWindow time.Duration
	// AuditInterval is how often tiers publish counts; default
	// DefaultAuditInterval.
	AuditInterval time.Duration
	// LoadInterval is the time between loader commits; default
	// DefaultLoadInterval.
	LoadInterval time.Duration
	// PartitionDuration is the loader's partition.duration.ms; 0 means
	// an hour.
	PartitionDuration time.Duration
	// CompactInterval, when positive, runs readiness and compaction
	// (package compact, with the audit service's counts) over the output
	// this often, and Verify reports the partitions' Readiness.
	CompactInterval time.Duration
	// HiveMetastoreURIs is hive.metastore.uris (thrift://host:port, tried
	// in order): the compaction part registers the topic's ready
	// partitions, as Avro and then as compacted Parquet, in table
	// <HiveDatabase>.<Topic> of that Hive Metastore, through the
	// TablesFile it writes into Dir. Needs CompactInterval.
	HiveMetastoreURIs []string
	// HiveDatabase is hive.database; default tables.DefaultDatabase.
	HiveDatabase string
	// CompactPauseAt and CompactPauseFile hold every compaction pass after
	// each of its steps of that name until the file exists
	// (compact.Config's PauseAt and PauseFile): the tests' hook to query
	// the tables between registration and compaction.
	CompactPauseAt, CompactPauseFile string
	// Executable is the tributary binary the jobs scheduler runs loader
	// jobs with; default os.Executable(). Only LoaderScheduled uses it.
	Executable string
	// LoaderScheduled runs the loader as a scheduled job of the jobs
	// scheduler (a `tributary loader run` child process every
	// LoadInterval) instead of in-process and continuously.
	LoaderScheduled bool
	// Secure runs every part over TLS with generated certificates, and
	// authenticated: SASL_SSL (SCRAM) to every cluster, the mirror's target
	// over mutual TLS, the registry and the audit dashboard over HTTPS with
	// basic authentication. The files are under <Dir>/secure (secure.go).
	Secure bool
	// Logger receives every part's logs; nil discards.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if len(c.Datacenters) == 0 {
		c.Datacenters = DefaultDatacenters
	}
	if c.Brokers == 0 {
		c.Brokers = DefaultBrokers
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.RegistryAddr == "" {
		c.RegistryAddr = net.JoinHostPort(c.Host, "0")
	}
	if c.DashboardAddr == "" {
		c.DashboardAddr = net.JoinHostPort(c.Host, "0")
	}
	if c.HDFSPath == "" {
		c.HDFSPath = DefaultHDFSPath
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.AuditWindow == 0 {
		c.AuditWindow = DefaultAuditWindow
	}
	if c.AuditInterval == 0 {
		c.AuditInterval = DefaultAuditInterval
	}
	if c.LoadInterval == 0 {
		c.LoadInterval = DefaultLoadInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks the configuration; errors name the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	if strings.TrimSpace(c.Dir) == "" {
		return bad("dir is required")
	}
	seen := map[string]bool{AnalyticsCluster: true}
	for _, dc := range c.Datacenters {
		if dc == "" || strings.ContainsAny(dc, "/ \\") || seen[dc] {
			return bad("datacenter %q: want distinct names without '/' or spaces, other than %q", dc, AnalyticsCluster)
		}
		seen[dc] = true
	}
	switch {
	case c.Brokers < 1 || c.Brokers > 16:
		return bad("brokers %d: want 1 to 16", c.Brokers)
	case c.Partitions < 1:
		return bad("partitions %d: must be >= 1", c.Partitions)
	case c.Port < 0 || c.Port+100*len(c.Datacenters)+3*c.Brokers > 65535:
		return bad("port %d: the ports of every cluster must be valid", c.Port)
	case c.AuditWindow < time.Second || c.AuditWindow%time.Millisecond != 0:
		return bad("audit window %v: want at least 1s, whole milliseconds", c.AuditWindow)
	case c.AuditInterval < 0:
		return bad("audit interval %v: must be positive", c.AuditInterval)
	case c.LoadInterval < 0:
		return bad("load interval %v: must be positive", c.LoadInterval)
	case c.CompactInterval < 0:
		return bad("compact interval %v: must be positive", c.CompactInterval)
	case strings.ContainsAny(c.Topic, "/ ") || strings.HasPrefix(c.Topic, "__"):
		return bad("topic %q: not a valid data topic", c.Topic)
	case !strings.HasPrefix(c.HDFSPath, "/"):
		return bad("hdfs path %q: must be absolute", c.HDFSPath)
	}
	for name, addr := range map[string]string{"registry": c.RegistryAddr, "dashboard": c.DashboardAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return bad("%s address %q: %v", name, addr, err)
		}
	}
	if c.ZooKeeper != "" {
		if _, _, err := zkcoord.ParseConnect(c.ZooKeeper); err != nil {
			return bad("zookeeper %q: %v", c.ZooKeeper, err)
		}
	}
	if c.HDFS != "" {
		if _, _, err := net.SplitHostPort(c.HDFS); err != nil {
			return bad("hdfs %q: want host:port: %v", c.HDFS, err)
		}
	}
	if err := c.HDFSOptions.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c.validateTables()
}

// zooKeeperFor returns the zookeeper.connect string of cluster ("" on
// in-process coordination).
func (c Config) zooKeeperFor(cluster string) string {
	if c.ZooKeeper == "" {
		return ""
	}
	hosts, chroot := c.ZooKeeper, ""
	if i := strings.IndexByte(c.ZooKeeper, '/'); i >= 0 {
		hosts, chroot = c.ZooKeeper[:i], strings.TrimSuffix(c.ZooKeeper[i:], "/")
	}
	if chroot == "" {
		chroot = DefaultZooKeeperRoot
	}
	return hosts + chroot + "/" + cluster
}

// OutputURI is where the loader writes: file://<Dir>/data, or
// hdfs://<HDFS><HDFSPath>.
func (c Config) OutputURI() string {
	c = c.withDefaults()
	if c.HDFS != "" {
		return "hdfs://" + c.HDFS + c.HDFSPath
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		dir = c.Dir
	}
	return "file://" + filepath.ToSlash(filepath.Join(dir, "data"))
}

// clusters lists every cluster, analytics last.
func (c Config) clusters() []string {
	return append(append([]string(nil), c.Datacenters...), AnalyticsCluster)
}
