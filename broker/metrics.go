package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/broker/cluster"
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
	}
	for _, c := range []prometheus.Collector{m.bytesIn, m.bytesOut, m.recordsIn, m.requests,
		m.requestErrors, m.duplicates, m.connections, m.logEnd, m.logStart, m.sendfileBytes, m.copiedBytes,
		m.underReplicated, m.isrChanges, m.offline, m.truncations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeOffsets(p *partition) {
	lbl := []string{p.topic, strconv.Itoa(int(p.index))}
	m.logEnd.WithLabelValues(lbl...).Set(float64(p.log.EndOffset()))
	m.logStart.WithLabelValues(lbl...).Set(float64(p.log.StartOffset()))
}

func (m *metrics) forget(p *partition) {
	lbl := []string{p.topic, strconv.Itoa(int(p.index))}
	m.logEnd.DeleteLabelValues(lbl...)
	m.logStart.DeleteLabelValues(lbl...)
	m.underReplicated.DeleteLabelValues(lbl...)
}

// observeReplica records p's replication state after a metadata change.
func (m *metrics) observeReplica(p *partition, cp cluster.Partition, me int32) {
	if cp.Leader != me {
		m.underReplicated.DeleteLabelValues(p.topic, strconv.Itoa(int(p.index)))
		return
	}
	m.observeISR(p, len(cp.Replicas), len(cp.ISR))
}

// observeISR records whether the partition p leads is under-replicated.
func (m *metrics) observeISR(p *partition, replicas, isr int) {
	v := 0.0
	if isr < replicas {
		v = 1
	}
	m.underReplicated.WithLabelValues(p.topic, strconv.Itoa(int(p.index))).Set(v)
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
