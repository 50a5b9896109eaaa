package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/group"
	"github.com/tributary/tributary/broker/partition"
	"github.com/tributary/tributary/broker/partlog"
)

// cleanableLog is what the log cleaner needs of a partition's storage
// (broker/partlog's Log; the in-memory test log has no cleaner).
type cleanableLog interface {
	Cleanable() (partlog.Cleanability, error)
	Clean(ctx context.Context, opts partlog.CleanOptions) (partlog.CleanStats, error)
}

// logCleaner runs log.cleaner.threads goroutines that each clean, every
// round, the dirtiest due log not being cleaned by another thread, and
// sleep log.cleaner.backoff.ms when none is due. The thread count, dedupe
// buffer, I/O rate and backoff are dynamic broker configs (reconfigure):
// a thread beyond a lowered count stops after its current cleaning, as
// Kafka's cleaner is resized between cleanings.
type logCleaner struct {
	b        *Broker
	throttle *ioThrottle
	mu       sync.Mutex
	cfg      config.Cleaner
	busy     map[*partition.Replica]bool
	// running marks the threads started and not yet stopped.
	running map[int]bool
	// last is each thread's last cleaning, for the max-* gauges.
	last map[int]partlog.CleanStats
}

// startCleaner starts the cleaner threads (stopped by shutdownCtx, waited
// for by b.wg) unless log.cleaner.enable=false, with the dynamic configs
// already known applied.
func (b *Broker) startCleaner() {
	cfg := b.cfg.Cleaner.WithDefaults()
	if cfg.Disable {
		return
	}
	c := &logCleaner{b: b, cfg: cfg, busy: map[*partition.Replica]bool{}, throttle: newIOThrottle(cfg.IOMaxBytesPerSecond),
		running: map[int]bool{}, last: map[int]partlog.CleanStats{}}
	b.cleaner.Store(c)
	c.reconfigure(b.dynamic().settings.server.Cleaner)
}

// reconfigure applies the dynamic cleaner settings of next (its other
// fields are ignored) and starts the threads a higher count needs.
func (c *logCleaner) reconfigure(next config.Cleaner) {
	next = next.WithDefaults()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Threads != next.Threads || c.cfg.DedupeBufferSize != next.DedupeBufferSize ||
		c.cfg.IOMaxBytesPerSecond != next.IOMaxBytesPerSecond || c.cfg.Backoff != next.Backoff {
		c.b.logger.Info("log cleaner reconfigured", "log.cleaner.threads", next.Threads,
			"log.cleaner.dedupe.buffer.size", next.DedupeBufferSize,
			"log.cleaner.io.max.bytes.per.second", next.IOMaxBytesPerSecond, "log.cleaner.backoff.ms", next.Backoff.Milliseconds())
	}
	c.cfg.Threads, c.cfg.DedupeBufferSize = next.Threads, next.DedupeBufferSize
	c.cfg.IOMaxBytesPerSecond, c.cfg.Backoff = next.IOMaxBytesPerSecond, next.Backoff
	c.throttle.setRate(next.IOMaxBytesPerSecond)
	if c.b.shutdownCtx.Err() != nil {
		return
	}
	for i := range c.cfg.Threads {
		if !c.running[i] {
			c.running[i] = true
			c.b.wg.Add(1)
			go c.run(c.b.shutdownCtx, i)
		}
	}
}

// options returns thread's cleaning options and backoff, or false if the
// thread is beyond the configured count (it is then marked stopped).
func (c *logCleaner) options(thread int) (partlog.CleanOptions, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if thread >= c.cfg.Threads {
		delete(c.running, thread)
		delete(c.last, thread)
		return partlog.CleanOptions{}, 0, false
	}
	return partlog.CleanOptions{DedupeBufferSize: c.cfg.DedupeBufferSize / int64(c.cfg.Threads), Throttle: c.throttle.wait,
		StepHook: c.cfg.StepHook}, c.cfg.Backoff, true
}

func (c *logCleaner) run(ctx context.Context, thread int) {
	defer c.b.wg.Done()
	for {
		opts, backoff, ok := c.options(thread)
		if !ok {
			return
		}
		p, l := c.pick()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
				continue
			}
		}
		st, err := l.Clean(ctx, opts)
		c.mu.Lock()
		delete(c.busy, p)
		c.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, partlog.ErrClosed):
		case err != nil:
			c.b.metrics.cleaner.failures.Inc()
			c.b.logger.Error("log cleaner failed", "topic", p.Topic(), "partition", p.Partition(), "err", err)
			// The log stays dirty: back off instead of retrying at once.
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		case st.SegmentsIn > 0:
			c.observe(thread, st)
			c.logStats(p, st)
		}
	}
}

// pick returns the due log with the highest dirty ratio, marked busy.
func (c *logCleaner) pick() (*partition.Replica, cleanableLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *partition.Replica
	var bestLog cleanableLog
	bestRatio, dirtiest := -1.0, 0.0
	for _, p := range c.b.partitions.All() {
		l, ok := p.Log().(cleanableLog)
		if !ok || c.busy[p] {
			continue
		}
		cl, err := l.Cleanable()
		if err == nil && cl.Compacted {
			dirtiest = max(dirtiest, cl.Ratio)
		}
		if err != nil || !cl.Due || cl.Ratio <= bestRatio {
			continue
		}
		best, bestLog, bestRatio = p, l, cl.Ratio
	}
	c.b.metrics.cleaner.maxDirtyPercent.Set(100 * dirtiest)
	if best != nil {
		c.busy[best] = true
	}
	return best, bestLog
}

// observe feeds one cleaning of thread into the cleaner's metrics.
func (c *logCleaner) observe(thread int, st partlog.CleanStats) {
	m := c.b.metrics.cleaner
	m.bytesRead.Add(float64(st.BytesRead))
	m.bytesWritten.Add(float64(st.BytesWritten))
	m.cleanings.Inc()
	m.recopyPercent.Set(100 * float64(st.BytesWritten) / float64(max(st.BytesRead, 1)))
	c.mu.Lock()
	c.last[thread] = st
	var maxTime, maxBuf float64
	for _, s := range c.last {
		maxTime, maxBuf = max(maxTime, s.Elapsed.Seconds()), max(maxBuf, s.MapUtilization)
	}
	c.mu.Unlock()
	m.maxCleanTime.Set(maxTime)
	m.maxBufferPercent.Set(100 * maxBuf)
}

// logStats writes Kafka's cleaner summary for one cleaning.
func (c *logCleaner) logStats(p *partition.Replica, st partlog.CleanStats) {
	secs := max(st.Elapsed.Seconds(), 1e-9)
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	c.b.logger.Info(fmt.Sprintf("Log cleaner: cleaned log %s-%d (dirty section = [%d, %d])", p.Topic(), p.Partition(), st.FirstDirty, st.MapEnd),
		"topic", p.Topic(), "partition", p.Partition(),
		"dirty_ratio", st.DirtyRatio,
		"read_mb", mb(st.BytesRead), "written_mb", mb(st.BytesWritten),
		"size_reduction_pct", 100*(1-float64(st.BytesWritten)/float64(max(st.BytesRead, 1))),
		"records_read", st.RecordsRead, "records_written", st.RecordsWritten,
		"tombstones_dropped", st.TombstonesDropped,
		"segments_in", st.SegmentsIn, "segments_out", st.SegmentsOut,
		"seconds", st.Elapsed.Seconds(), "mb_per_sec", mb(st.BytesRead)/secs)
}

// ioThrottle is log.cleaner.io.max.bytes.per.second, shared by the threads.
type ioThrottle struct {
	mu    sync.Mutex
	rate  float64
	start time.Time
	bytes float64
}

func newIOThrottle(rate float64) *ioThrottle {
	return &ioThrottle{rate: rate, start: time.Now()}
}

// setRate changes the rate; a new rate starts with no history.
func (t *ioThrottle) setRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rate != t.rate {
		t.rate, t.start, t.bytes = rate, time.Now(), 0
	}
}

// wait sleeps as long as the cleaner is ahead of its rate.
func (t *ioThrottle) wait(ctx context.Context, n int64) error {
	t.mu.Lock()
	if t.rate <= 0 {
		t.mu.Unlock()
		return nil
	}
	t.bytes += float64(n)
	ahead := time.Duration(t.bytes/t.rate*float64(time.Second)) - time.Since(t.start)
	if time.Since(t.start) > 10*time.Second { // forget old history
		t.start, t.bytes = time.Now(), 0
	}
	t.mu.Unlock()
	if ahead <= 10*time.Millisecond {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(ahead):
		return nil
	}
}

// errKeylessRecord: a compacted topic refuses a record without a key.
var errKeylessRecord = errors.New("Compacted topic cannot accept message without key")

// requireKeys returns errKeylessRecord if a batch holds a record without a
// key (INVALID_RECORD for a compacted topic, as in Kafka).
func requireKeys(records []byte, dec kgo.Decompressor) error {
	_, err := replayBatches(records, 0, dec, func(r group.Record) error {
		if r.Key == nil && !r.Control {
			return errKeylessRecord
		}
		return nil
	})
	return err
}
