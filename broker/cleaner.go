package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/group"
	plog "github.com/tributary/tributary/broker/log"
)

// cleanableLog is what the log cleaner needs of a partition's storage
// (broker/log's Log; the in-memory test log has no cleaner).
type cleanableLog interface {
	Cleanable() (plog.Cleanability, error)
	Clean(ctx context.Context, opts plog.CleanOptions) (plog.CleanStats, error)
}

// logCleaner runs log.cleaner.threads goroutines that each clean, every
// round, the dirtiest due log not being cleaned by another thread, and
// sleep log.cleaner.backoff.ms when none is due.
type logCleaner struct {
	b        *Broker
	cfg      CleanerConfig
	throttle *ioThrottle
	mu       sync.Mutex
	busy     map[*partition]bool
	// last is each thread's last cleaning, for the max-* gauges.
	last []plog.CleanStats
}

// startCleaner starts the cleaner threads (stopped by shutdownCtx, waited
// for by b.wg) unless log.cleaner.enable=false.
func (b *Broker) startCleaner() {
	cfg := b.cfg.Cleaner.withDefaults()
	if cfg.Disable {
		return
	}
	c := &logCleaner{b: b, cfg: cfg, busy: map[*partition]bool{}, throttle: newIOThrottle(cfg.IOMaxBytesPerSecond),
		last: make([]plog.CleanStats, cfg.Threads)}
	b.wg.Add(cfg.Threads)
	for i := range cfg.Threads {
		go c.run(b.shutdownCtx, i)
	}
}

func (c *logCleaner) run(ctx context.Context, thread int) {
	defer c.b.wg.Done()
	opts := plog.CleanOptions{DedupeBufferSize: c.cfg.DedupeBufferSize / int64(c.cfg.Threads), Throttle: c.throttle.wait,
		StepHook: c.cfg.StepHook}
	for {
		p, l := c.pick()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(c.cfg.Backoff):
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
		case errors.Is(err, plog.ErrClosed):
		case err != nil:
			c.b.metrics.cleaner.failures.Inc()
			c.b.logger.Error("log cleaner failed", "topic", p.topic, "partition", p.index, "err", err)
			// The log stays dirty: back off instead of retrying at once.
			select {
			case <-ctx.Done():
				return
			case <-time.After(c.cfg.Backoff):
			}
		case st.SegmentsIn > 0:
			c.observe(thread, st)
			c.logStats(p, st)
		}
	}
}

// pick returns the due log with the highest dirty ratio, marked busy.
func (c *logCleaner) pick() (*partition, cleanableLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *partition
	var bestLog cleanableLog
	bestRatio, dirtiest := -1.0, 0.0
	for _, p := range c.b.allPartitions() {
		l, ok := p.log.(cleanableLog)
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
func (c *logCleaner) observe(thread int, st plog.CleanStats) {
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
func (c *logCleaner) logStats(p *partition, st plog.CleanStats) {
	secs := max(st.Elapsed.Seconds(), 1e-9)
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	c.b.logger.Info(fmt.Sprintf("Log cleaner: cleaned log %s-%d (dirty section = [%d, %d])", p.topic, p.index, st.FirstDirty, st.MapEnd),
		"topic", p.topic, "partition", p.index,
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
	rate  float64
	mu    sync.Mutex
	start time.Time
	bytes float64
}

func newIOThrottle(rate float64) *ioThrottle {
	return &ioThrottle{rate: rate, start: time.Now()}
}

// wait sleeps as long as the cleaner is ahead of its rate.
func (t *ioThrottle) wait(ctx context.Context, n int64) error {
	if t.rate <= 0 {
		return nil
	}
	t.mu.Lock()
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
