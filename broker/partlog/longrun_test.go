package partlog

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// longRunEnv enables TestLongRunThroughput: set it to the number of GiB to
// append (the issue asks for >= 10). TRIBUTARY_LOG_LONGRUN_DIR picks the
// disk (default: the test temp dir); the data is deleted afterwards.
const longRunEnv = "TRIBUTARY_LOG_LONGRUN_GIB"

// TestLongRunThroughput appends 1 MiB batches until the log holds the
// requested GiB and reports the rate of every GiB, so that the first and the
// last can be compared. Not part of `make test`: it is I/O heavy.
func TestLongRunThroughput(t *testing.T) {
	gib, _ := strconv.Atoi(os.Getenv(longRunEnv))
	if gib <= 0 {
		t.Skipf("set %s=<GiB> to run", longRunEnv) // an opt-in measurement, not a check that needs a server
	}
	dir := t.TempDir()
	if d := os.Getenv("TRIBUTARY_LOG_LONGRUN_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "longrun-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	cfg := Config{RetentionMs: -1, Logger: quietLogger()}
	// TRIBUTARY_LOG_LONGRUN_FLUSH_MS sets log.flush.interval.ms: with it the
	// page cache does not soak up the first GiBs, so all go at disk speed.
	if ms, _ := strconv.Atoi(os.Getenv("TRIBUTARY_LOG_LONGRUN_FLUSH_MS")); ms > 0 {
		cfg.FlushInterval = time.Duration(ms) * time.Millisecond
	}
	// TRIBUTARY_LOG_LONGRUN_FLUSH_MESSAGES sets log.flush.interval.messages
	// (one 1 MiB batch = one record): a synchronous fsync every N MiB.
	if n, _ := strconv.Atoi(os.Getenv("TRIBUTARY_LOG_LONGRUN_FLUSH_MESSAGES")); n > 0 {
		cfg.FlushIntervalMessages = int64(n)
	}
	l, err := Open(dir+"/p-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Delete()
	batch := logtest.NewBatch(bytes.Repeat([]byte("x"), 1<<20-200))
	buf := make([]byte, len(batch))
	var rates []float64
	for g := range gib {
		start := time.Now()
		for written := 0; written < 1<<30; written += len(batch) {
			copy(buf, batch)
			if _, err := l.Append(buf); err != nil {
				t.Fatal(err)
			}
		}
		took := time.Since(start)
		rate := float64(1<<30) / took.Seconds() / (1 << 20)
		rates = append(rates, rate)
		fmt.Printf("GiB %2d: %7.1f MiB/s (%v)\n", g+1, rate, took.Round(time.Millisecond))
	}
	first, last := rates[0], rates[len(rates)-1]
	fmt.Printf("first GiB %.1f MiB/s, last GiB %.1f MiB/s, last/first %.2f\n", first, last, last/first)
}
