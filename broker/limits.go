package broker

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	plog "github.com/tributary/tributary/broker/log"
	"github.com/tributary/tributary/internal/properties"
)

// Defaults of the resource limits, Kafka's where Kafka has the property.
const (
	// DefaultConnectionsMaxIdle is connections.max.idle.ms (10 minutes).
	DefaultConnectionsMaxIdle = 10 * time.Minute
	// DefaultDescriptorReserve is log.descriptor.reserve: spare descriptors
	// the storage engine holds for rolls, flushes and checkpoints.
	DefaultDescriptorReserve = 16
)

// LimitsConfig bounds what clients can make the broker hold: connections,
// open files and the rate of topic creation. Zero values mean defaults.
type LimitsConfig struct {
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection with no
	// request in flight and nothing read or written for this long is
	// closed. Zero means 10 minutes; negative means never.
	ConnectionsMaxIdle time.Duration
	// MaxConnections is max.connections: connections accepted at once;
	// more are closed as soon as accepted. Zero means what the descriptor
	// budget leaves for connections (see MaxOpenFiles).
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip; zero means unlimited.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per host or IP limits ("127.0.0.1:200,admin-host:0").
	MaxConnectionsPerIPOverrides map[string]int
	// MaxOpenFiles is log.max.open.files (Tributary's, after RocksDB's
	// max_open_files): segment files open at once across all partitions.
	// Zero means half of RLIMIT_NOFILE less the reserve.
	MaxOpenFiles int
	// DescriptorReserve is log.descriptor.reserve (Tributary's): spare
	// descriptors kept for rolls, flushes and checkpoints when the process
	// runs out. Zero means 16; negative means none.
	DescriptorReserve int
	// ControllerMutationRate is controller.mutation.rate (KIP-599's
	// controller_mutation_rate quota as a broker-wide default): partitions
	// one client id may create or delete per second, averaged over
	// quota.window.num windows of quota.window.size.seconds. Zero means
	// unlimited (Kafka's default).
	ControllerMutationRate float64
	// QuotaWindowNum is quota.window.num (default 11) and QuotaWindowSize
	// quota.window.size.seconds (default 1 s): the quota's burst is
	// rate x num x size.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

func (c LimitsConfig) withDefaults() LimitsConfig {
	if c.ConnectionsMaxIdle == 0 {
		c.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if c.DescriptorReserve == 0 {
		c.DescriptorReserve = DefaultDescriptorReserve
	}
	if c.QuotaWindowNum == 0 {
		c.QuotaWindowNum = 11
	}
	if c.QuotaWindowSize == 0 {
		c.QuotaWindowSize = time.Second
	}
	return c
}

// Validate names the offending property.
func (c LimitsConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.MaxConnections < 0:
		return fmt.Errorf("%w: max.connections: must be >= 0, got %d", ErrInvalidConfig, c.MaxConnections)
	case c.MaxConnectionsPerIP < 0:
		return fmt.Errorf("%w: max.connections.per.ip: must be >= 0, got %d", ErrInvalidConfig, c.MaxConnectionsPerIP)
	case c.MaxOpenFiles < 0:
		return fmt.Errorf("%w: log.max.open.files: must be >= 0, got %d", ErrInvalidConfig, c.MaxOpenFiles)
	case c.ControllerMutationRate < 0 || math.IsNaN(c.ControllerMutationRate) || math.IsInf(c.ControllerMutationRate, 0):
		return fmt.Errorf("%w: controller.mutation.rate: must be >= 0, got %v", ErrInvalidConfig, c.ControllerMutationRate)
	case c.QuotaWindowNum < 1:
		return fmt.Errorf("%w: quota.window.num: must be >= 1, got %d", ErrInvalidConfig, c.QuotaWindowNum)
	case c.QuotaWindowSize < time.Millisecond:
		return fmt.Errorf("%w: quota.window.size.seconds: must be >= 1", ErrInvalidConfig)
	}
	for host, n := range c.MaxConnectionsPerIPOverrides {
		if host == "" || n < 0 {
			return fmt.Errorf("%w: max.connections.per.ip.overrides: bad entry %q:%d", ErrInvalidConfig, host, n)
		}
	}
	return nil
}

// limitPropertySetters are the keys of LimitsConfig, merged into
// propertySetters below.
var limitPropertySetters = map[string]func(c *Config, v string) error{
	"connections.max.idle.ms": func(c *Config, v string) error {
		n, err := properties.ParseInt(v, 64, math.MinInt64)
		if err != nil {
			return err
		}
		if n <= 0 {
			c.Limits.ConnectionsMaxIdle = -1
		} else {
			c.Limits.ConnectionsMaxIdle = time.Duration(n) * time.Millisecond
		}
		return nil
	},
	"max.connections":        func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxConnections, v) },
	"max.connections.per.ip": func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxConnectionsPerIP, v) },
	"max.connections.per.ip.overrides": func(c *Config, v string) error {
		m, err := parsePerIPOverrides(v)
		c.Limits.MaxConnectionsPerIPOverrides = m
		return err
	},
	"log.max.open.files": func(c *Config, v string) error { return setLimitInt(&c.Limits.MaxOpenFiles, v) },
	"log.descriptor.reserve": func(c *Config, v string) error {
		n, err := properties.ParseInt(v, 32, 0)
		if err != nil {
			return err
		}
		c.Limits.DescriptorReserve = int(n)
		if n == 0 {
			c.Limits.DescriptorReserve = -1 // none; zero is the default in LimitsConfig
		}
		return nil
	},
	"controller.mutation.rate": func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("not a non-negative number")
		}
		if f == math.MaxFloat64 || f > 1e15 { // Kafka's "unlimited" is Double.MAX_VALUE
			f = 0
		}
		c.Limits.ControllerMutationRate = f
		return nil
	},
	"quota.window.num": func(c *Config, v string) error { return setLimitInt(&c.Limits.QuotaWindowNum, v) },
	"quota.window.size.seconds": func(c *Config, v string) error {
		var n int
		if err := setLimitInt(&n, v); err != nil || n < 1 {
			return fmt.Errorf("must be a positive integer")
		}
		c.Limits.QuotaWindowSize = time.Duration(n) * time.Second
		return nil
	},
}

func init() {
	// The limits keep their keys beside their fields; one table serves
	// ConfigFromProperties.
	for k, f := range limitPropertySetters {
		propertySetters[k] = f
	}
}

// setLimitInt parses a positive count (0, which LimitsConfig reads as its
// default, is refused); Kafka writes "unlimited" as Int.MaxValue, which is
// our zero.
func setLimitInt(dst *int, v string) error {
	n, err := properties.ParseInt(v, 64, 1)
	if err != nil {
		return err
	}
	if n >= math.MaxInt32 {
		n = 0
	}
	*dst = int(n)
	return nil
}

// parsePerIPOverrides parses Kafka's "host:n,host2:m" (an IPv6 address
// keeps its colons: the count follows the last one).
func parsePerIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			return nil, fmt.Errorf("entry %q is not host:count", part)
		}
		n, err := strconv.Atoi(strings.TrimSpace(part[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("entry %q: count must be a non-negative integer", part)
		}
		out[strings.TrimSpace(part[:i])] = n
	}
	return out, nil
}

// resources is what the broker holds against floods: the descriptor
// budget and the file cache, connection limits, the creation quota,
// open-failure tracking and rate-limited logs.
type resources struct {
	budget   descriptorBudget
	files    *plog.FileCache
	conns    *connLimiter
	quota    *mutationQuota
	failures *openFailures
	logs     *rateLogger

	refused      *prometheus.CounterVec
	idleClosed   prometheus.Counter
	throttled    prometheus.Counter
	openFailed   prometheus.Counter
	cacheMetrics prometheus.Collector
}

func newResources(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*resources, error) {
	lc := cfg.Limits.withDefaults()
	budget := planDescriptors(softNoFileLimit(), lc)
	r := &resources{
		budget:   budget,
		files:    plog.NewFileCache(budget.files, budget.logReserve),
		conns:    newConnLimiter(budget.conns, lc.MaxConnectionsPerIP, lc.MaxConnectionsPerIPOverrides),
		quota:    newMutationQuota(lc.ControllerMutationRate, time.Duration(lc.QuotaWindowNum)*lc.QuotaWindowSize, time.Now),
		failures: newOpenFailures(time.Now),
		logs:     newRateLogger(logger, time.Second, time.Now),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "connections_refused_total",
			Help: "Connections closed as soon as accepted, by the limit they hit (max.connections, max.connections.per.ip, descriptors).",
		}, []string{"limit"}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "connections_idle_closed_total",
			Help: "Connections closed after connections.max.idle.ms without activity.",
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "mutations_throttled_total",
			Help: "Topic creations refused with THROTTLING_QUOTA_EXCEEDED (controller.mutation.rate).",
		}),
		openFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "partition_open_failures_total",
			Help: "Attempts to open a led partition that failed (e.g. out of file descriptors).",
		}),
	}
	r.cacheMetrics = newFileCacheCollector(r.files)
	for _, c := range []prometheus.Collector{r.refused, r.idleClosed, r.throttled, r.openFailed, r.cacheMetrics} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// fileCacheCollector exports the FileCache's counters.
type fileCacheCollector struct {
	c                                  *plog.FileCache
	open, capacity, spare, opens, evic *prometheus.Desc
}

func newFileCacheCollector(c *plog.FileCache) *fileCacheCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("tributary_log_"+name, help, nil, nil)
	}
	return &fileCacheCollector{c: c,
		open:     d("open_files", "Segment files open in the file cache."),
		capacity: d("open_files_capacity", "The file cache's bound (log.max.open.files)."),
		spare:    d("spare_descriptors", "Reserve descriptors held now (log.descriptor.reserve)."),
		opens:    d("file_opens_total", "Segment files opened by the file cache."),
		evic:     d("file_evictions_total", "Idle segment files closed to make room."),
	}
}

func (f *fileCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{f.open, f.capacity, f.spare, f.opens, f.evic} {
		ch <- d
	}
}

func (f *fileCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := f.c.Stats()
	ch <- prometheus.MustNewConstMetric(f.open, prometheus.GaugeValue, float64(s.Open))
	ch <- prometheus.MustNewConstMetric(f.capacity, prometheus.GaugeValue, float64(s.Capacity))
	ch <- prometheus.MustNewConstMetric(f.spare, prometheus.GaugeValue, float64(s.Spare))
	ch <- prometheus.MustNewConstMetric(f.opens, prometheus.CounterValue, float64(s.Opens))
	ch <- prometheus.MustNewConstMetric(f.evic, prometheus.CounterValue, float64(s.Evictions))
}
