package mirror

import "github.com/prometheus/client_golang/prometheus"

// metrics are the mirror's Prometheus series.
type metrics struct {
	records         *prometheus.CounterVec // source, topic: acknowledged by the target
	bytes           *prometheus.CounterVec // source, topic: key+value bytes acknowledged
	lag             *prometheus.GaugeVec   // source, topic, partition
	sinceCommit     *prometheus.GaugeVec   // source
	bufferedRecords prometheus.Gauge
	bufferedBytes   prometheus.Gauge
	stopped         prometheus.Gauge
	rebalances      *prometheus.CounterVec // source
	topics          *prometheus.GaugeVec   // source
	checkpointAge   *prometheus.GaugeVec   // source, group
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_mirror_records_total",
			Help: "Records the target acknowledged, per source and source topic.",
		}, []string{"source", "topic"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_mirror_bytes_total",
			Help: "Key and value bytes the target acknowledged, per source and source topic.",
		}, []string{"source", "topic"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_mirror_lag_records",
			Help: "Source end offset minus the offset after the last record the target acknowledged, per owned source partition.",
		}, []string{"source", "topic", "partition"}),
		sinceCommit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_mirror_seconds_since_commit",
			Help: "Seconds since the last successful source offset commit (since start if none).",
		}, []string{"source"}),
		bufferedRecords: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tributary_mirror_buffered_records",
			Help: "Records sent to the target and not acknowledged yet (bounded by buffer.max.records).",
		}),
		bufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tributary_mirror_buffered_bytes",
			Help: "Bytes sent to the target and not acknowledged yet (bounded by buffer.memory).",
		}),
		stopped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tributary_mirror_stopped_partitions",
			Help: "Source partitions stopped because the target refused a record for good.",
		}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_mirror_rebalances_total",
			Help: "Partition assignments received, per source (Kafka group protocol sources).",
		}, []string{"source"}),
		topics: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_mirror_topics",
			Help: "Source topics being mirrored, per source.",
		}, []string{"source"}),
		checkpointAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_mirror_checkpoint_age_seconds",
			Help: "Seconds since the checkpoints of a source consumer group last covered every partition it committed (emit.checkpoints.enabled).",
		}, []string{"source", "group"}),
	}
	for _, c := range []prometheus.Collector{m.records, m.bytes, m.lag, m.sinceCommit,
		m.bufferedRecords, m.bufferedBytes, m.stopped, m.rebalances, m.topics, m.checkpointAge} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
