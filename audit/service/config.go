package service

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/internal/network"
)

// Defaults.
const (
	// DefaultGrace is --grace: windows without reports before a window closes.
	DefaultGrace = 2
	// DefaultMaxFuture bounds how far after now an event's window may start.
	DefaultMaxFuture = time.Hour
	// DefaultPartitionRefresh is how often new audit-topic partitions are looked for.
	DefaultPartitionRefresh = 10 * time.Second
	// DefaultRetention is how long windows (and their event IDs) are kept.
	DefaultRetention = 30 * 24 * time.Hour
	// pruneInterval is how often windows older than the retention go.
	pruneInterval = time.Hour
	// StoreFile is the store's file name under Config.Dir.
	StoreFile = "audit.db"
)

// Cluster is one cluster whose audit topic the service reads.
type Cluster struct {
	Name    string
	Brokers []string
	// Security is how the service reaches Brokers (security.protocol,
	// ssl.*, sasl.*); the zero value is PLAINTEXT.
	Security network.Security
}

// Config configures a Service. Zero values mean defaults.
type Config struct {
	// Clusters to consume; at least one.
	Clusters []Cluster
	// Dir holds the store (required).
	Dir string
	// Listen is the HTTP address, host:port (port 0 picks one). Required.
	Listen string
	// Security is the listener's TLS and basic authentication (the API,
	// the dashboard and /metrics need Read; /healthz none); nil serves
	// plain, anonymous HTTP.
	Security *network.HTTPSecurity
	// Grace is how many windows a window stays open after its end and its
	// last report; default DefaultGrace.
	Grace int
	// MaxFuture bounds how far in the future an event's window may start;
	// default DefaultMaxFuture.
	MaxFuture time.Duration
	// Retention is how long a window is kept after its start; events for
	// older windows are refused (their IDs are forgotten). Default
	// DefaultRetention.
	Retention time.Duration
	// Topic is the audit topic; default audit.DefaultTopic.
	Topic string
	// PartitionRefresh is how often new partitions are looked for;
	// default DefaultPartitionRefresh.
	PartitionRefresh time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Registerer receives the service's metrics and /metrics serves
	// Gatherer; nil means a registry of the service's own.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Readiness, when set, serves the loader output's partition states
	// (GET /api/topics/{topic}/partitions).
	Readiness *Readiness
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if len(c.Clusters) == 0 {
		errs = append(errs, fmt.Errorf("%w: cluster: at least one NAME=HOST:PORT is required", ErrInvalidConfig))
	}
	seen := map[string]bool{}
	for _, cl := range c.Clusters {
		switch {
		case cl.Name == "" || strings.ContainsAny(cl.Name, "\x00="):
			errs = append(errs, fmt.Errorf("%w: cluster: bad name %q", ErrInvalidConfig, cl.Name))
		case seen[cl.Name]:
			errs = append(errs, fmt.Errorf("%w: cluster: %q named twice", ErrInvalidConfig, cl.Name))
		case len(cl.Brokers) == 0:
			errs = append(errs, fmt.Errorf("%w: cluster %s: no brokers", ErrInvalidConfig, cl.Name))
		}
		seen[cl.Name] = true
		for _, b := range cl.Brokers {
			if _, _, err := net.SplitHostPort(b); err != nil {
				errs = append(errs, fmt.Errorf("%w: cluster %s: broker %q: want HOST:PORT", ErrInvalidConfig, cl.Name, b))
			}
		}
	}
	if c.Dir == "" {
		errs = append(errs, fmt.Errorf("%w: dir is required", ErrInvalidConfig))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("%w: listen %q: want HOST:PORT", ErrInvalidConfig, c.Listen))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("%w: grace: %d must be >= 0", ErrInvalidConfig, c.Grace))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("%w: retention: must be >= 0", ErrInvalidConfig))
	}
	if c.MaxFuture < 0 {
		errs = append(errs, fmt.Errorf("%w: max-future: must be >= 0", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}

func (c *Config) fill() {
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxFuture == 0 {
		c.MaxFuture = DefaultMaxFuture
	}
	if c.Topic == "" {
		c.Topic = audit.DefaultTopic
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.PartitionRefresh == 0 {
		c.PartitionRefresh = DefaultPartitionRefresh
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		reg := prometheus.NewRegistry()
		c.Registerer, c.Gatherer = reg, reg
	}
	if c.Gatherer == nil {
		c.Gatherer = prometheus.DefaultGatherer
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
