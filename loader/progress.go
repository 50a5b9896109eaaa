package loader

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CommitInfo describes one partition commit, for progress output.
type CommitInfo struct {
	Topic             string
	Partition         int32
	Seq               int64
	FirstOffset       int64
	NextOffset        int64
	Records, Errors   int64
	Duplicates, Files int64
	// FileBytes is the size of the data files committed.
	FileBytes  int64
	ReachedEnd bool
}

// Progress is a live view of a run, safe to read while it goes.
type Progress struct {
	records, bytes, errors, files, dups atomic.Int64
	fileBytes                           atomic.Int64
	done, total                         atomic.Int64
	mu                                  sync.Mutex
	onCommit                            func(CommitInfo)
}

// Snapshot returns records, bytes, errors, files so far and partitions
// done of total.
func (p *Progress) Snapshot() (records, bytes, errors, files, done, total int64) {
	return p.records.Load(), p.bytes.Load(), p.errors.Load(), p.files.Load(), p.done.Load(), p.total.Load()
}

// commit reports a commit; calls are serialized, so the callback need
// not be safe for concurrent use.
func (p *Progress) commit(ci CommitInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onCommit != nil {
		p.onCommit(ci)
	}
}

// Summary is what a run did.
type Summary struct {
	Records int64 `json:"records"`
	Files   int64 `json:"files"`
	// RecordBytes counts the key and value bytes of the records loaded, as
	// the brokers held them (the audit's bytes).
	RecordBytes int64 `json:"record_bytes"`
	// FileBytes is the size of the data files committed (Avro blocks,
	// compressed by codec), what the output grew by.
	FileBytes  int64   `json:"file_bytes"`
	Errors     int64   `json:"errors"`
	Duplicates int64   `json:"duplicates"`
	Partitions int64   `json:"partitions"`
	Seconds    float64 `json:"seconds"`
}

type metrics struct {
	records, bytes, errors, duplicates, files, commits prometheus.Counter
	fileBytes                                          prometheus.Counter
	commitSeconds                                      prometheus.Histogram
	// icebergCommitSeconds times Table.Append (data files and the catalog
	// commit) in table.format=iceberg.
	icebergCommitSeconds prometheus.Histogram
	reg                  prometheus.Registerer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tributary", Subsystem: "loader", Name: name, Help: help})
	}
	m := &metrics{
		records:    c("records_total", "Records committed to the output."),
		bytes:      c("bytes_total", "Key and value bytes of the records committed."),
		errors:     c("bad_records_total", "Records written to _errors (not framed, unknown schema, undecodable)."),
		duplicates: c("duplicates_total", "Mirror duplicates dropped by the origin high-water marks."),
		files:      c("files_total", "Data files committed."),
		fileBytes:  c("file_bytes_total", "Bytes of the data files committed."),
		commits:    c("commits_total", "Partition commits."),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tributary", Subsystem: "loader",
			Name: "commit_seconds", Help: "Time to commit one partition (close files, manifest, moves, audit).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		icebergCommitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tributary", Subsystem: "loader",
			Name: "iceberg_commit_seconds", Help: "Time of one Iceberg append of a partition's commit (Parquet data files and the catalog commit, retries included).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		reg: reg,
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.records, m.bytes, m.errors, m.duplicates, m.files, m.fileBytes, m.commits, m.commitSeconds, m.icebergCommitSeconds} {
			_ = reg.Register(col)
		}
	}
	return m
}

// registerIcebergRetries exports the catalog's commit retry count.
func (m *metrics) registerIcebergRetries(retries func() int64) {
	if m.reg == nil {
		return
	}
	_ = m.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "tributary", Subsystem: "loader",
		Name: "iceberg_commit_retries_total", Help: "Iceberg commits tried again (a concurrent writer committed first, or the outcome was unknown)."},
		func() float64 { return float64(retries()) }))
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
