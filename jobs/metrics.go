package jobs

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	lastSuccess *prometheus.GaugeVec
	duration    *prometheus.HistogramVec
	runs        *prometheus.CounterVec
	failures    *prometheus.CounterVec
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
	}
	if reg != nil {
		reg.MustRegister(m.lastSuccess, m.duration, m.runs, m.failures)
	}
	return m
}
