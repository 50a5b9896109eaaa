package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// rateLogger logs repeated events of one kind at most once per interval:
// the first occurrence is logged at once, later ones in the same interval
// are counted and reported with the next line of that kind ("repeated"
// says how many were suppressed). A flood of bad requests or failing opens
// therefore costs at most one line per second per kind, not one per event.
// Safe for concurrent use.
type rateLogger struct {
	logger   *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	kinds map[string]*rateKind
}

type rateKind struct {
	last       time.Time
	suppressed int
}

func newRateLogger(logger *slog.Logger, interval time.Duration, now func() time.Time) *rateLogger {
	return &rateLogger{logger: logger, interval: interval, now: now, kinds: map[string]*rateKind{}}
}

// maxRateKinds bounds the kinds remembered; kinds are fixed strings in the
// code, so this is only a guard.
const maxRateKinds = 1024

// log logs msg at level unless a line of the same kind went out less than
// an interval ago; it reports whether it logged.
func (r *rateLogger) log(level slog.Level, kind, msg string, args ...any) bool {
	now := r.now()
	r.mu.Lock()
	k := r.kinds[kind]
	if k == nil {
		if len(r.kinds) >= maxRateKinds {
			clear(r.kinds)
		}
		k = &rateKind{}
		r.kinds[kind] = k
	} else if now.Sub(k.last) < r.interval {
		k.suppressed++
		r.mu.Unlock()
		return false
	}
	suppressed := k.suppressed
	k.last, k.suppressed = now, 0
	r.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "repeated", suppressed)
	}
	r.logger.Log(context.Background(), level, msg, args...)
	return true
}
