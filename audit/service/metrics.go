package service

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	consumed   *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	bad        *prometheus.CounterVec
	lag        *prometheus.GaugeVec
}

var (
	descCompleteness = prometheus.NewDesc("audit_window_completeness",
		"Completeness (tier / producer) of the last closed window, per topic and tier.", []string{"topic", "tier"}, nil)
	descMissing = prometheus.NewDesc("audit_window_missing_records",
		"Records missing at a tier in the last closed window, per topic and tier.", []string{"topic", "tier"}, nil)
	descSurplus = prometheus.NewDesc("audit_window_surplus_records",
		"Records a tier counted beyond the producer's in the last closed window.", []string{"topic", "tier"}, nil)
	descLastClosed = prometheus.NewDesc("audit_last_closed_window_start_seconds",
		"Start (Unix seconds) of the last closed window, per topic.", []string{"topic"}, nil)
	descProducer = prometheus.NewDesc("audit_window_producer_records",
		"The producer tier's total in the last closed window, per topic.", []string{"topic"}, nil)
)

func newMetrics(s *Service, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		consumed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audit_service_events_consumed_total",
			Help: "Audit events applied, per source cluster."}, []string{"cluster"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audit_service_duplicate_events_total",
			Help: "Audit events dropped because their ID was applied before."}, []string{"cluster"}),
		bad: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "audit_service_bad_events_total",
			Help: "Audit-topic records skipped as bad input, by reason (decode, version, invalid, future)."}, []string{"cluster", "reason"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "audit_service_lag_records",
			Help: "Records of the audit topic not consumed yet, per cluster."}, []string{"cluster"}),
	}
	for _, c := range []prometheus.Collector{m.consumed, m.duplicates, m.bad, m.lag, windowCollector{s}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// windowCollector computes the last closed window of each topic at scrape
// time, from the store.
type windowCollector struct{ s *Service }

func (windowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCompleteness, descMissing, descSurplus, descLastClosed, descProducer} {
		ch <- d
	}
}

func (c windowCollector) Collect(ch chan<- prometheus.Metric) {
	topics, err := c.s.Topics()
	if err != nil {
		return
	}
	for _, topic := range topics {
		reps, err := c.s.Windows(topic, zeroTime, zeroTime)
		if err != nil {
			continue
		}
		for i := len(reps) - 1; i >= 0; i-- {
			r := reps[i]
			if !r.Closed {
				continue
			}
			ch <- prometheus.MustNewConstMetric(descLastClosed, prometheus.GaugeValue, float64(r.WindowStart.Unix()), topic)
			ch <- prometheus.MustNewConstMetric(descProducer, prometheus.GaugeValue, float64(r.Producer), topic)
			for _, t := range r.Tiers {
				if t.Completeness != nil {
					ch <- prometheus.MustNewConstMetric(descCompleteness, prometheus.GaugeValue, *t.Completeness, topic, t.Tier)
				}
				ch <- prometheus.MustNewConstMetric(descMissing, prometheus.GaugeValue, float64(t.Missing), topic, t.Tier)
				ch <- prometheus.MustNewConstMetric(descSurplus, prometheus.GaugeValue, float64(t.Surplus), topic, t.Tier)
			}
			break
		}
	}
}
