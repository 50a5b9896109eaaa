package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/partition"
)

// metrics are the broker's Prometheus collectors, registered on the
// registry given to New.
type metrics struct {
	bytesIn       *prometheus.CounterVec
	bytesOut      *prometheus.CounterVec
	recordsIn     *prometheus.CounterVec
	requests      *prometheus.HistogramVec
	requestErrors *prometheus.CounterVec
	duplicates    *prometheus.CounterVec
	connections   prometheus.Gauge
	logEnd        *prometheus.GaugeVec
	logStart      *prometheus.GaugeVec
	// Fetch record bytes by how they reached the socket, so that a silent
	// loss of the zero-copy path (a wrapped connection, a kernel refusing
	// sendfile) shows up.
	sendfileBytes prometheus.Counter
	copiedBytes   prometheus.Counter
	// Replication: per led partition, whether it is under-replicated (ISR
	// smaller than its replicas); ISR changes this broker made as leader;
	// partitions without a leader in this broker's view; follower
	// truncations of a divergent tail.
	underReplicated *prometheus.GaugeVec
	isrChanges      *prometheus.CounterVec
	offline         prometheus.Gauge
	truncations     prometheus.Counter
	cleaner         cleanerMetrics
}

// cleanerMetrics are the log cleaner's, under Kafka's names (kafka.log:
// LogCleaner and LogCleanerManager) where Kafka has one.
type cleanerMetrics struct {
	maxCleanTime     prometheus.Gauge // max-clean-time-secs
	recopyPercent    prometheus.Gauge // cleaner-recopy-percent
	maxBufferPercent prometheus.Gauge // max-buffer-utilization-percent
	maxDirtyPercent  prometheus.Gauge // max-dirty-percent
	bytesRead        prometheus.Counter
	bytesWritten     prometheus.Counter
	cleanings        prometheus.Counter
	failures         prometheus.Counter
}

func newCleanerMetrics() cleanerMetrics {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tributary", Subsystem: "log_cleaner", Name: name, Help: help})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tributary", Subsystem: "log_cleaner", Name: name, Help: help})
	}
	return cleanerMetrics{
		maxCleanTime:     gauge("max_clean_time_seconds", "Longest last cleaning among the cleaner threads (Kafka's max-clean-time-secs)."),
		recopyPercent:    gauge("recopy_percent", "Bytes written as a percentage of bytes read by the last cleaning (Kafka's cleaner-recopy-percent)."),
		maxBufferPercent: gauge("max_buffer_utilization_percent", "Highest use of the offset map (log.cleaner.dedupe.buffer.size) among the threads' last cleanings (Kafka's max-buffer-utilization-percent)."),
		maxDirtyPercent:  gauge("max_dirty_percent", "Dirty ratio of the dirtiest compacted log, in percent, at the cleaner's last look (Kafka's max-dirty-percent)."),
		bytesRead:        counter("read_bytes_total", "Bytes of segments the cleaner read."),
		bytesWritten:     counter("written_bytes_total", "Bytes of cleaned segments the cleaner wrote."),
		cleanings:        counter("cleanings_total", "Cleaning passes that rewrote segments."),
		failures:         counter("failures_total", "Cleanings that failed (the log is retried after log.cleaner.backoff.ms)."),
	}
}

func (c cleanerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.maxCleanTime, c.recopyPercent, c.maxBufferPercent, c.maxDirtyPercent,
		c.bytesRead, c.bytesWritten, c.cleanings, c.failures}
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "bytes_in_total",
			Help: "Record batch bytes appended by Produce.",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "bytes_out_total",
			Help: "Record batch bytes sent by Fetch.",
		}, []string{"topic"}),
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "records_in_total",
			Help: "Records appended by Produce, counted from batch headers.",
		}, []string{"topic"}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "request_duration_seconds",
			Help:    "Time from a request's decoding to its response being written, per API.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14),
		}, []string{"api"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "bad_requests_total",
			Help: "Connections closed because of a bad frame, by reason.",
		}, []string{"reason"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "duplicate_batches_total",
			Help: "Idempotent producer retries of batches already in the log (not appended again).",
		}, []string{"topic"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "connections",
			Help: "Open client connections.",
		}),
		logEnd: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "log_end_offset",
			Help: "Log end offset (next offset to be written) per partition.",
		}, []string{"topic", "partition"}),
		logStart: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "log_start_offset",
			Help: "Log start offset per partition.",
		}, []string{"topic", "partition"}),
		sendfileBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "fetch", Name: "sendfile_bytes_total",
			Help: "Record batch bytes Fetch sent from segment files with sendfile (zero copy).",
		}),
		copiedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "fetch", Name: "copied_bytes_total",
			Help: "Record batch bytes Fetch copied through user space instead of sendfile.",
		}),
		underReplicated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "under_replicated",
			Help: "1 for a partition this broker leads whose ISR is smaller than its replica set, else 0 (Kafka's UnderReplicatedPartitions, per partition).",
		}, []string{"topic", "partition"}),
		isrChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "isr_changes_total",
			Help: "ISR shrinks and expands written by this broker as leader (Kafka's IsrShrinksPerSec and IsrExpandsPerSec).",
		}, []string{"change"}),
		offline: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "offline_partitions",
			Help: "Partitions with no live leader in this broker's view of the cluster (Kafka's OfflinePartitionsCount).",
		}),
		truncations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tributary", Subsystem: "broker", Name: "replica_truncations_total",
			Help: "Divergent log tails this broker dropped as a follower of a new leader.",
		}),
		cleaner: newCleanerMetrics(),
	}
	for _, c := range append([]prometheus.Collector{m.bytesIn, m.bytesOut, m.recordsIn, m.requests,
		m.requestErrors, m.duplicates, m.connections, m.logEnd, m.logStart, m.sendfileBytes, m.copiedBytes,
		m.underReplicated, m.isrChanges, m.offline, m.truncations}, m.cleaner.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeOffsets(p *partition.Replica) {
	lbl := []string{p.Topic(), strconv.Itoa(int(p.Partition()))}
	m.logEnd.WithLabelValues(lbl...).Set(float64(p.Log().EndOffset()))
	m.logStart.WithLabelValues(lbl...).Set(float64(p.Log().StartOffset()))
}

func (m *metrics) forget(p *partition.Replica) {
	lbl := []string{p.Topic(), strconv.Itoa(int(p.Partition()))}
	m.logEnd.DeleteLabelValues(lbl...)
	m.logStart.DeleteLabelValues(lbl...)
	m.underReplicated.DeleteLabelValues(lbl...)
}

// observeReplica records p's replication state after a metadata change.
func (m *metrics) observeReplica(p *partition.Replica, cp cluster.Partition, me int32) {
	if cp.Leader != me {
		m.underReplicated.DeleteLabelValues(p.Topic(), strconv.Itoa(int(p.Partition())))
		return
	}
	m.observeISR(p, len(cp.Replicas), len(cp.ISR))
}

// observeISR records whether the partition p leads is under-replicated.
func (m *metrics) observeISR(p *partition.Replica, replicas, isr int) {
	v := 0.0
	if isr < replicas {
		v = 1
	}
	m.underReplicated.WithLabelValues(p.Topic(), strconv.Itoa(int(p.Partition()))).Set(v)
}

// observeOffline counts the partitions of snap without a leader.
func (m *metrics) observeOffline(snap cluster.Snapshot) {
	n := 0
	for _, t := range snap.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				n++
			}
		}
	}
	m.offline.Set(float64(n))
}
