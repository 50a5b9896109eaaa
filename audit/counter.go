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

// cell accumulates one topic and window: Count adds to it with atomics,
// without a lock. Its totals only grow; publish turns them into deltas
// against what it published last (the published fields are publish's own,
// under pubMu).
type cell struct {
	count, bytes, errors atomic.Int64

	pubCount, pubBytes, pubErrors int64
	idle                          int // publishes in a row without a delta
}

// cells is an immutable map of the cells: Count reads it through an atomic
// pointer, and adding or retiring cells replaces it (copy on write).
type cells map[cellKey]*cell

// retireAfter is how many publishes in a row a cell must go without a
// delta before it leaves the map; it is read one last time a publish
// later, so that a Count still holding it (it loaded the map before the
// swap) lands in a published delta.
const retireAfter = 3

// Counter is what a tier embeds: Count is cheap and safe for concurrent use;
// a background loop publishes the accumulated deltas every Interval and on
// Flush and Close, with a fresh ID per event and retries of a failed publish
// under the same IDs.
type Counter struct {
	cfg      Config
	windowMs int64
	pub      Publisher
	idPrefix string

	// cells is read without a lock; mu serializes its writers (a Count
	// adding a cell, publish retiring some).
	cells  atomic.Pointer[cells]
	mu     sync.Mutex
	closed atomic.Bool

	pubMu   sync.Mutex // serializes publishing; guards pending, seq and retired
	pending []Event
	seq     uint64
	retired []retiredCell

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
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.cells.Store(&cells{})
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
	if c.closed.Load() {
		return
	}
	k := cellKey{topic, w}
	if cl := (*c.cells.Load())[k]; cl != nil {
		cl.add(records, bytes, errs)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.cells.Load()
	cl := cur[k]
	if cl == nil {
		next := make(cells, len(cur)+1)
		for k, v := range cur {
			next[k] = v
		}
		cl = &cell{}
		next[k] = cl
		c.cells.Store(&next)
	}
	cl.add(records, bytes, errs)
}

// retiredCell is a cell out of the map, read by the next publish.
type retiredCell struct {
	key cellKey
	*cell
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
	now := time.Now().UTC()
	emit := func(k cellKey, v *cell) bool {
		count, bytes, errs := v.count.Load(), v.bytes.Load(), v.errors.Load()
		dc, db, de := count-v.pubCount, bytes-v.pubBytes, errs-v.pubErrors
		if dc == 0 && db == 0 && de == 0 {
			return false
		}
		v.pubCount, v.pubBytes, v.pubErrors = count, bytes, errs
		c.seq++
		c.pending = append(c.pending, Event{
			ID:          c.idPrefix + strconv.FormatUint(c.seq, 10),
			Tier:        c.cfg.Tier,
			Cluster:     c.cfg.Cluster,
			Instance:    c.cfg.Instance,
			Topic:       k.topic,
			WindowStart: time.UnixMilli(k.window).UTC(),
			Window:      c.cfg.Window,
			Count:       dc,
			Bytes:       db,
			Errors:      de,
			EmittedAt:   now,
		})
		return true
	}
	for _, r := range c.retired {
		emit(r.key, r.cell)
	}
	c.retired = c.retired[:0]
	var retire []cellKey
	for k, v := range *c.cells.Load() {
		if emit(k, v) {
			v.idle = 0
		} else if v.idle++; v.idle >= retireAfter {
			retire = append(retire, k)
		}
	}
	if len(retire) > 0 {
		c.mu.Lock()
		cur := *c.cells.Load()
		next := make(cells, len(cur))
		for k, v := range cur {
			next[k] = v
		}
		for _, k := range retire {
			c.retired = append(c.retired, retiredCell{k, next[k]})
			delete(next, k)
		}
		c.cells.Store(&next)
		c.mu.Unlock()
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
	if c.closed.Load() {
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
		c.closed.Store(true)
		// A Count that passed the closed check before the store may still
		// be adding; taking mu waits out one adding a cell, and publish
		// reads every cell (retired ones too) after that.
		c.mu.Lock()
		c.mu.Unlock() //nolint:staticcheck // an empty critical section: a barrier
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
