package jobs

import (
	"encoding/json"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	lastSuccess *prometheus.GaugeVec
	duration    *prometheus.HistogramVec
	runs        *prometheus.CounterVec
	failures    *prometheus.CounterVec
	// blocked mirrors, per job, the tables_schema_blocked list of its
	// latest run's summary (compact, retention): the child process's own
	// tributary_tables_schema_blocked gauge ends with it.
	blocked     *prometheus.GaugeVec
	blockedMu   sync.Mutex
	blockedSeen map[string]map[string]bool // job -> topics set to 1
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_jobs_last_success_timestamp_seconds",
			Help: "Unix time at which the job's last successful run ended, on any scheduler (among its newest runs).",
		}, []string{"job"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_jobs_run_duration_seconds",
			Help:    "Duration of the runs this scheduler executed, by final status.",
			Buckets: prometheus.ExponentialBuckets(0.05, 3, 12),
		}, []string{"job", "status"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_jobs_runs_total",
			Help: "Runs this scheduler claimed or recorded, by final status (skipped included).",
		}, []string{"job", "status"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_jobs_failures_total",
			Help: "Runs that ended failed or timed_out (after their retries), including orphans this scheduler reaped.",
		}, []string{"job"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_jobs_tables_schema_blocked",
			Help: "1 while the job's latest run reported the topic's table registration stopped by a schema change the table cannot take (its summary's tables_schema_blocked), else 0.",
		}, []string{"job", "topic"}),
		blockedSeen: map[string]map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.lastSuccess, m.duration, m.runs, m.failures, m.blocked)
	}
	return m
}

// observeSummary updates the gauges a run's summary feeds; a run without
// a summary (killed before writing one) changes nothing.
func (m *metrics) observeSummary(job string, summary json.RawMessage) {
	if len(summary) == 0 {
		return
	}
	var s struct {
		Blocked []string `json:"tables_schema_blocked"`
	}
	if json.Unmarshal(summary, &s) != nil {
		return
	}
	m.blockedMu.Lock()
	defer m.blockedMu.Unlock()
	now := map[string]bool{}
	for _, topic := range s.Blocked {
		now[topic] = true
		m.blocked.WithLabelValues(job, topic).Set(1)
	}
	for topic := range m.blockedSeen[job] {
		if !now[topic] {
			m.blocked.WithLabelValues(job, topic).Set(0)
		}
	}
	m.blockedSeen[job] = now
}
