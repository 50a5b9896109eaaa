package testenv

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// EnvDebug set to 1 makes Logger log everything, down to debug.
const EnvDebug = "TRIBUTARY_TEST_DEBUG"

// Logger returns a text logger writing to t's log (shown when the test
// fails or with -v) at level and above, or at debug with
// TRIBUTARY_TEST_DEBUG=1.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	if os.Getenv(EnvDebug) == "1" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(LogWriter(t), &slog.HandlerOptions{Level: level}))
}

// LogWriter returns a writer that sends each write to t.Log as a line,
// until t's cleanup: background goroutines that log after it (a testing.T
// panics when logged to after its test ended) are dropped. Registered as
// early as the logger is made, that cleanup runs after those of the
// servers the logger is given to.
func LogWriter(t testing.TB) io.Writer {
	w := &logWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
	})
	return w
}

type logWriter struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
