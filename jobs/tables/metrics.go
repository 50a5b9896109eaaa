package tables

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	syncs    *prometheus.CounterVec
	blocked  *prometheus.GaugeVec
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tables_syncs_total",
			Help: "Table registrations (Sync) by topic and result: ok, incompatible (a schema change the table cannot take), unavailable (metastore unreachable) or error.",
		}, []string{"topic", "result"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_tables_schema_blocked",
			Help: "1 while a topic's registration is stopped by an incompatible schema change, else 0.",
		}, []string{"topic"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tributary_tables_sync_duration_seconds",
			Help:    "Duration of table registrations.",
			Buckets: prometheus.ExponentialBuckets(0.005, 3, 10),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.syncs, m.blocked, m.duration)
	}
	return m
}

func (m *metrics) observe(topic string, began time.Time, err error) {
	m.duration.Observe(time.Since(began).Seconds())
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, ErrIncompatible):
		result = "incompatible"
	case errors.Is(err, ErrUnavailable):
		result = "unavailable"
	default:
		result = "error"
	}
	m.syncs.WithLabelValues(topic, result).Inc()
	if result == "incompatible" {
		m.blocked.WithLabelValues(topic).Set(1)
	} else if result == "ok" {
		m.blocked.WithLabelValues(topic).Set(0)
	}
}
