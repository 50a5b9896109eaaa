package quota

import (
	"sync"
	"time"
)

// Window is how usage is measured: Num samples (quota.window.num, Kafka's
// default 11) of Size each (quota.window.size.seconds, default 1 s).
type Window struct {
	Num  int
	Size time.Duration
}

// DefaultWindow is Kafka's.
var DefaultWindow = Window{Num: 11, Size: time.Second}

func (w Window) withDefaults() Window {
	if w.Num < 1 {
		w.Num = DefaultWindow.Num
	}
	if w.Size <= 0 {
		w.Size = DefaultWindow.Size
	}
	return w
}

// rate is Kafka's sampled Rate: usage summed into up to Num samples, a new
// one started when the current is Size old, samples older than Num x Size
// forgotten; the rate is their sum over the time they span, which is taken
// as at least (Num-1) x Size, so that a new client is not throttled on its
// first bytes but may use (Num-1) x Size x quota before it is.
type rate struct {
	samples []sample
	current int
	last    time.Time // of the last record, for pruning
}

type sample struct {
	start time.Time
	value float64
}

func newRate(w Window, now time.Time) *rate {
	r := &rate{samples: make([]sample, 1, w.Num), last: now}
	r.samples[0].start = now
	return r
}

func (r *rate) record(w Window, v float64, now time.Time) {
	r.last = now
	if now.Sub(r.samples[r.current].start) >= w.Size {
		r.current = (r.current + 1) % w.Num
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{})
		}
		r.samples[r.current] = sample{start: now}
	}
	r.samples[r.current].value += v
}

// measure returns the rate per second and the time it is measured over.
func (r *rate) measure(w Window, now time.Time) (float64, time.Duration) {
	total := 0.0
	oldest := now
	for i := range r.samples {
		s := &r.samples[i]
		if now.Sub(s.start) >= time.Duration(w.Num)*w.Size {
			*s = sample{start: now}
		}
		total += s.value
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	span := now.Sub(oldest)
	if full := int(span / w.Size); full < w.Num-1 {
		span += time.Duration(w.Num-1-full) * w.Size
	}
	if span <= 0 {
		return 0, 0
	}
	return total / span.Seconds(), span
}

// throttle is Kafka's: how long the client must stay away for its rate,
// measured over the same span, to fall back to limit; 0 while within it.
// It is capped at the whole window.
func throttle(observed, limit float64, span time.Duration, w Window) time.Duration {
	if observed <= limit || limit < 0 {
		return 0
	}
	if limit == 0 {
		return time.Duration(w.Num) * w.Size
	}
	t := time.Duration((observed - limit) / limit * float64(span))
	return min(t, time.Duration(w.Num)*w.Size)
}

// maxRates bounds the usage entries a Meter keeps; idle ones are dropped
// first (Kafka expires a quota sensor after an hour without use).
const maxRates = 10000

// Meter measures one quota key's usage per Tags. Safe for concurrent use.
type Meter struct {
	win   Window
	mu    sync.Mutex
	rates map[Tags]*rate
}

// NewMeter returns a Meter over w (zero fields: Kafka's defaults).
func NewMeter(w Window) *Meter {
	return &Meter{win: w.withDefaults(), rates: map[Tags]*rate{}}
}

// Window is the meter's window.
func (m *Meter) Window() Window { return m.win }

// Record adds v to the usage of t and returns the rate now and how long
// the client must be throttled for it to fall back to limit.
func (m *Meter) Record(t Tags, limit, v float64, now time.Time) (float64, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rates[t]
	if r == nil {
		if len(m.rates) >= maxRates {
			m.pruneLocked(now)
		}
		r = newRate(m.win, now)
		m.rates[t] = r
	}
	r.record(m.win, v, now)
	observed, span := r.measure(m.win, now)
	return observed, throttle(observed, limit, span, m.win)
}

// Unrecord takes back v recorded for t (a fetch answered empty because
// its client was throttled, as Kafka's unrecordQuotaSensor).
func (m *Meter) Unrecord(t Tags, v float64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.rates[t]; r != nil {
		r.record(m.win, -v, now)
	}
}

// Rate is the current rate of t (0 if unknown).
func (m *Meter) Rate(t Tags, now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rates[t]
	if r == nil {
		return 0
	}
	v, _ := r.measure(m.win, now)
	return v
}

func (m *Meter) pruneLocked(now time.Time) {
	for t, r := range m.rates {
		if now.Sub(r.last) >= time.Duration(m.win.Num)*m.win.Size {
			delete(m.rates, t)
		}
	}
	if len(m.rates) >= maxRates {
		clear(m.rates)
	}
}
