package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxPendingEvents bounds the events a Counter keeps for retry while its
// publisher fails; beyond it the oldest are dropped (and logged). Dropped
// counts are lost to audit only: the report shows a surplus downstream.
const MaxPendingEvents = 100_000

// Config configures a Counter. Zero values mean defaults.
type Config struct {
	// Tier names what counts ("producer", "mirror", "loader", a user's
	// name). Required.
	Tier string
	// Cluster is the cluster the counted records are in.
	Cluster string
	// Instance names the counting process; default "host:pid".
	Instance string
	// Window is the audit window; default DefaultWindow. It must be a
	// whole number of milliseconds.
	Window time.Duration
	// Interval is how often deltas are published; default DefaultInterval.
	Interval time.Duration
	// Topic is the audit topic, whose records are never counted; default
	// DefaultTopic.
	Topic string
	// Logger receives publish failures; nil discards.
	Logger *slog.Logger
	// Registerer receives the counter's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Tier == "" {
		errs = append(errs, fmt.Errorf("%w: audit.tier is required", ErrInvalidConfig))
	}
	if c.Window < 0 || c.Window%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("%w: audit.window: %v must be a positive whole number of milliseconds", ErrInvalidConfig, c.Window))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("%w: audit.interval: %v must be positive", ErrInvalidConfig, c.Interval))
	}
	return errors.Join(errs...)
}

func (c *Config) fill() {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// DefaultInstance returns "host:pid".
func DefaultInstance() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

type cellKey struct {
	topic  string
	window int64 // window start, Unix ms
}

// cell's fields are updated atomically under the read lock of
// Counter.mu: Count only needs the write lock to add a new cell.
type cell struct{ count, bytes, errors atomic.Int64 }

// Counter is what a tier embeds: Count is cheap and safe for concurrent use;
// a background loop publishes the accumulated deltas every Interval and on
// Flush and Close, with a fresh ID per event and retries of a failed publish
// under the same IDs.
type Counter struct {
	cfg      Config
	windowMs int64
	pub      Publisher
	idPrefix string

	// mu's read lock covers updates of existing cells (atomics), its
	// write lock adding cells and publish swapping the map out: once
	// publish holds the write lock, no Count still writes the old map.
	mu     sync.RWMutex
	cells  map[cellKey]*cell
	closed bool

	pubMu   sync.Mutex // serializes publishing; guards pending and seq
	pending []Event
	seq     uint64

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	published, failures, dropped prometheus.Counter
}

// NewCounter validates cfg and starts a Counter publishing through pub.
func NewCounter(cfg Config, pub Publisher) (*Counter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pub == nil {
		return nil, fmt.Errorf("%w: a publisher is required", ErrInvalidConfig)
	}
	cfg.fill()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("audit: instance id: %w", err)
	}
	c := &Counter{
		cfg:      cfg,
		windowMs: cfg.Window.Milliseconds(),
		pub:      pub,
		idPrefix: hex.EncodeToString(id[:]) + "-",
		cells:    make(map[cellKey]*cell),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.published = c.metric("audit_counter_events_published_total", "Audit events acknowledged by the audit topic.")
	c.failures = c.metric("audit_counter_publish_failures_total", "Failed attempts to publish audit events (retried with the same IDs).")
	c.dropped = c.metric("audit_counter_events_dropped_total", "Audit events dropped because too many were waiting for a retry.")
	go c.loop()
	return c, nil
}

// metric registers a counter labelled with the tier; a second Counter of the
// same tier on one registry shares it.
func (c *Counter) metric(name, help string) prometheus.Counter {
	m := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help,
		ConstLabels: prometheus.Labels{"tier": c.cfg.Tier}})
	if c.cfg.Registerer == nil {
		return m
	}
	if err := c.cfg.Registerer.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return existing
			}
		}
	}
	return m
}

// Count adds records (and bytes) of topic whose timestamp is
// recordTimestamp. Records of the audit topic and of "__" topics are
// ignored, as is anything counted after Close.
func (c *Counter) Count(topic string, recordTimestamp time.Time, records, bytes int64) {
	c.add(topic, recordTimestamp, records, bytes, 0)
}

// CountErrors adds records of topic the tier could not handle.
func (c *Counter) CountErrors(topic string, recordTimestamp time.Time, records int64) {
	c.add(topic, recordTimestamp, 0, 0, records)
}

func (c *Counter) add(topic string, ts time.Time, records, bytes, errs int64) {
	if ignoredTopic(topic, c.cfg.Topic) {
		return
	}
	ms := ts.UnixMilli()
	w := ms - ms%c.windowMs
	if ms%c.windowMs < 0 {
		w -= c.windowMs
	}
	k := cellKey{topic, w}
	c.mu.RLock()
	cl := c.cells[k]
	if cl != nil && !c.closed {
		cl.add(records, bytes, errs)
		c.mu.RUnlock()
		return
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if cl = c.cells[k]; cl == nil {
		cl = &cell{}
		c.cells[k] = cl
	}
	cl.add(records, bytes, errs)
}

func (cl *cell) add(records, bytes, errs int64) {
	if records != 0 {
		cl.count.Add(records)
	}
	if bytes != 0 {
		cl.bytes.Add(bytes)
	}
	if errs != 0 {
		cl.errors.Add(errs)
	}
}

func (c *Counter) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(c.cfg.Interval, 10*time.Second))
			if err := c.publish(ctx); err != nil {
				c.cfg.Logger.Warn("audit: publish failed; will retry with the same event ids", "tier", c.cfg.Tier, "err", err)
			}
			cancel()
		}
	}
}

// publish turns the accumulated deltas into events (after those still
// pending from a failed attempt) and publishes them all.
func (c *Counter) publish(ctx context.Context) error {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	c.mu.Lock()
	var cells map[cellKey]*cell
	if len(c.cells) > 0 {
		// Swap under the lock: the old map is ours alone from here on.
		cells, c.cells = c.cells, make(map[cellKey]*cell, len(c.cells))
	}
	c.mu.Unlock()
	now := time.Now().UTC()
	for k, v := range cells {
		count, bytes, errs := v.count.Load(), v.bytes.Load(), v.errors.Load()
		if count == 0 && bytes == 0 && errs == 0 {
			continue
		}
		c.seq++
		c.pending = append(c.pending, Event{
			ID:          c.idPrefix + strconv.FormatUint(c.seq, 10),
			Tier:        c.cfg.Tier,
			Cluster:     c.cfg.Cluster,
			Instance:    c.cfg.Instance,
			Topic:       k.topic,
			WindowStart: time.UnixMilli(k.window).UTC(),
			Window:      c.cfg.Window,
			Count:       count,
			Bytes:       bytes,
			Errors:      errs,
			EmittedAt:   now,
		})
	}
	if over := len(c.pending) - MaxPendingEvents; over > 0 {
		c.cfg.Logger.Error("audit: dropping unpublished events; their counts are lost to audit", "tier", c.cfg.Tier, "events", over)
		c.dropped.Add(float64(over))
		c.pending = append(c.pending[:0:0], c.pending[over:]...)
	}
	if len(c.pending) == 0 {
		return nil
	}
	if err := c.pub.Publish(ctx, c.pending); err != nil {
		c.failures.Inc()
		return err
	}
	c.published.Add(float64(len(c.pending)))
	c.pending = nil
	return nil
}

// Flush publishes everything counted so far (and any events still pending
// from a failed attempt) and waits for the acknowledgement, or until ctx
// ends. A failed Flush keeps the events for the next attempt.
func (c *Counter) Flush(ctx context.Context) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return c.publish(ctx)
}

// Close stops the background loop, stops counting and publishes what is
// left, bounded by ctx. Close is idempotent.
func (c *Counter) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.closeErr = c.publish(ctx)
	})
	return c.closeErr
}

// Pending returns how many events wait for a retry (for tests and
// metrics).
func (c *Counter) Pending() int {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return len(c.pending)
}
