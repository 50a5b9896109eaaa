package broker

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// resources is what the broker holds against floods: the descriptor
// budget and the file cache, connection limits, the creation quota,
// open-failure tracking and rate-limited logs.
type resources struct {
	budget   descriptorBudget
	files    *partlog.FileCache
	conns    *connLimiter
	quota    *mutationQuota
	failures *partition.OpenFailures
	logs     *rateLogger

	refused      *prometheus.CounterVec
	idleClosed   prometheus.Counter
	throttled    prometheus.Counter
	openFailed   prometheus.Counter
	cacheMetrics prometheus.Collector
}

func newResources(cfg config.Config, logger *slog.Logger, reg prometheus.Registerer) (*resources, error) {
	lc := cfg.Limits.WithDefaults()
	budget := planDescriptors(softNoFileLimit(), lc)
	r := &resources{
		budget:   budget,
		files:    partlog.NewFileCache(budget.files, budget.logReserve),
		conns:    newConnLimiter(budget.conns, lc.MaxConnectionsPerIP, lc.MaxConnectionsPerIPOverrides),
		quota:    newMutationQuota(lc.ControllerMutationRate, time.Duration(lc.QuotaWindowNum)*lc.QuotaWindowSize, time.Now),
		failures: partition.NewOpenFailures(time.Now),
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
	c                                  *partlog.FileCache
	open, capacity, spare, opens, evic *prometheus.Desc
}

func newFileCacheCollector(c *partlog.FileCache) *fileCacheCollector {
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
