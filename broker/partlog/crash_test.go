package partlog

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// crashChildEnv, when set to a directory, turns the test binary into the
// appender child of TestCrashRecovery.
const crashChildEnv = "TRIBUTARY_LOG_CRASH_CHILD"

var crashConfig = Config{SegmentBytes: 256 << 10, IndexIntervalBytes: 1024, RetentionMs: -1}

// crashBatch is the deterministic batch number seq of child run: an
// idempotent batch of 1..7 records, one of them padded, so that content can
// be checked and retries recognized after a restart.
func crashBatch(run, seq int, firstSeq int32) []byte {
	n := 1 + seq%7
	rs := make([]logtest.Record, n)
	for i := range rs {
		rs[i] = logtest.Record{Value: []byte(crashValue(run, seq, i))}
	}
	rs[n-1].Value = append(rs[n-1].Value, strings.Repeat("#", (seq*37)%3000)...)
	return logtest.Batch(logtest.Options{Timestamp: int64(seq), Idempotent: true, ProducerID: int64(run),
		BaseSequence: firstSeq}, rs...)
}

func crashValue(run, seq, i int) string { return fmt.Sprintf("run%d-batch%d-rec%d", run, seq, i) }

func runCrashChild(dir string, run int) {
	cfg := crashConfig
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := Open(dir, cfg)
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(2)
	}
	var firstSeq int32
	for seq := 0; ; seq++ {
		r, err := l.Append(crashBatch(run, seq, firstSeq))
		if err != nil {
			fmt.Println("append failed:", err)
			os.Exit(3)
		}
		firstSeq += int32(1 + seq%7)
		fmt.Printf("ack %d %d %d %d\n", run, seq, r.BaseOffset, r.LastOffset)
	}
}

type ack struct {
	run, seq   int
	base, last int64
}

// TestCrashRecovery kills an appending child with SIGKILL at random moments
// and checks after each restart that every acknowledged batch is intact and
// that the whole log reads back as valid batches with consecutive offsets.
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		var run int
		fmt.Sscan(os.Getenv(crashChildEnv+"_RUN"), &run)
		runCrashChild(dir, run)
		return
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var acked []ack
	kills := 0
	// Each run is bounded by runChildAndKill's own timeout; the whole test
	// has no time budget, so a loaded machine only makes it slower.
	for run := 1; run <= 22; run++ {
		got := runChildAndKill(t, dir, run, time.Duration(20+rng.IntN(250))*time.Millisecond)
		kills++
		acked = append(acked, got...)
		l := checkCrashLog(t, dir, acked)
		// Retry of the child's last acknowledged batch: the restored
		// producer state must recognize it.
		if n := len(got); n > 0 {
			a := got[n-1]
			var firstSeq int32
			for s := 0; s < a.seq; s++ {
				firstSeq += int32(1 + s%7)
			}
			r, err := l.Append(crashBatch(run, a.seq, firstSeq))
			if err != nil || !r.Duplicate || r.BaseOffset != a.base || r.LastOffset != a.last {
				t.Fatalf("run %d: retry of acknowledged batch %d: %+v, %v; want duplicate at %d", run, a.seq, r, err, a.base)
			}
		}
		// Sometimes leave this process's session unclean as well.
		if rng.IntN(2) == 0 {
			l.crashForTest()
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d acknowledged batches checked", kills, len(acked))
}

func runChildAndKill(t *testing.T, dir string, run int, after time.Duration) []ack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashRecovery$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_RUN=%d", crashChildEnv, run))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []ack, 1)
	go func() {
		var acks []ack
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var a ack
			if n, _ := fmt.Sscanf(sc.Text(), "ack %d %d %d %d", &a.run, &a.seq, &a.base, &a.last); n == 4 {
				acks = append(acks, a)
			} else if !strings.HasPrefix(sc.Text(), "ack") {
				t.Errorf("child: %s", sc.Text())
			}
		}
		lines <- acks
	}()
	// Kill only once the child is appending, so every run counts.
	timer := time.NewTimer(after)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	cmd.Process.Signal(syscall.SIGKILL)
	var acks []ack
	select {
	case acks = <-lines:
	case <-ctx.Done():
		t.Fatal("child output did not end")
	}
	cmd.Wait()
	return acks
}

// checkCrashLog opens dir (recovering it) and compares its content with the
// acknowledged batches.
func checkCrashLog(t *testing.T, dir string, acked []ack) *Log {
	t.Helper()
	l, err := Open(dir, Config{SegmentBytes: crashConfig.SegmentBytes, IndexIntervalBytes: crashConfig.IndexIntervalBytes,
		RetentionMs: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	values := map[int64]string{}
	for off := l.StartOffset(); off < l.EndOffset(); {
		v, err := l.Read(off, 256<<10)
		if err != nil {
			t.Fatalf("read %d after kill: %v", off, err)
		}
		b, err := v.Bytes()
		v.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := ValidateBatch(b); err != nil {
			t.Fatalf("read %d returned an invalid batch: %v", off, err)
		}
		offs, vs := logtest.Values(b)
		if offs[0] != off {
			t.Fatalf("read %d started at %d", off, offs[0])
		}
		for i, o := range offs {
			if o != off+int64(i) {
				t.Fatalf("offset gap at %d", o)
			}
			values[o] = string(vs[i])
		}
		off = offs[len(offs)-1] + 1
	}
	for _, a := range acked {
		for o := a.base; o <= a.last; o++ {
			want := crashValue(a.run, a.seq, int(o-a.base))
			if got := values[o]; !strings.HasPrefix(got, want) || len(got) > len(want) && o != a.last {
				t.Fatalf("acknowledged offset %d (run %d batch %d) holds %.40q, want %q", o, a.run, a.seq, got, want)
			}
		}
	}
	return l
}
