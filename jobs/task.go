package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables every job's child process gets.
const (
	EnvJobName     = "TRIBUTARY_JOB_NAME"
	EnvRunID       = "TRIBUTARY_JOB_RUN_ID"
	EnvScheduledAt = "TRIBUTARY_JOB_SCHEDULED_AT" // RFC 3339 with nanoseconds, UTC
	EnvScheduler   = "TRIBUTARY_JOB_SCHEDULER"
	EnvAttempt     = "TRIBUTARY_JOB_ATTEMPT" // 1 for the first attempt
	// EnvSummaryFile names a file where the job may write a JSON object:
	// the run's summary in its history.
	EnvSummaryFile = "TRIBUTARY_JOB_SUMMARY"
)

// outputTail is how much of a child's output is kept for the error text.
const outputTail = 2048

// task is one child process to run for an attempt.
type task struct {
	argv []string
	env  []string
	dir  string
}

// taskFor turns a job into the child process it runs. exe is the tributary
// binary; summary the file the child writes its JSON summary to.
func taskFor(j Job, exe, summary string) (task, error) {
	a := j.Args
	switch j.Kind {
	case KindLoader:
		return task{argv: []string{exe, "loader", "run", "--config", a["config"].(string), "--summary-json", summary}}, nil
	case KindExec:
		cmd, _ := stringList(a["command"])
		t := task{argv: cmd}
		if d, ok := a["dir"].(string); ok {
			t.dir = d
		}
		if v, ok := a["env"]; ok {
			m, _ := stringMap(v)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				t.env = append(t.env, k+"="+m[k])
			}
		}
		return t, nil
	case KindCompact:
		argv := []string{exe, "jobs", "compact", "--base", a["base"].(string), "--loader-job", a["loader_job"].(string), "--summary-json", summary}
		if v, ok := a["topics"]; ok {
			ts, _ := stringList(v)
			argv = append(argv, "--topics", strings.Join(ts, ","))
		}
		if v, ok := a["delay"]; ok {
			argv = append(argv, "--delay", v.(string))
		}
		if v, ok := a["codec"]; ok {
			argv = append(argv, "--codec", v.(string))
		}
		if v, ok := a["parquet_timestamp_type"]; ok {
			argv = append(argv, "--parquet-timestamp-type", v.(string))
		}
		if v, ok := a["target_file_size"]; ok {
			argv = append(argv, "--target-file-size", fmt.Sprint(v))
		}
		if v, ok := a["sort_by"]; ok {
			m, _ := sortByArg(v)
			for _, t := range slices.Sorted(maps.Keys(m)) {
				argv = append(argv, "--sort-by", t+"="+strings.Join(m[t], ","))
			}
		}
		if v, ok := a["hdfs_config"]; ok {
			argv = append(argv, "--hdfs-config", v.(string))
		}
		for _, k := range []struct{ arg, flag string }{{"audit_url", "--audit-url"},
			{"completeness.threshold", "--completeness-threshold"}, {"completeness.timeout", "--completeness-timeout"},
			{"catalog_file", "--catalog-file"}, {"tables_config", "--tables-config"}} {
			if v, ok := a[k.arg]; ok {
				argv = append(argv, k.flag, fmt.Sprint(v))
			}
		}
		return task{argv: argv}, nil
	case KindRetention:
		argv := []string{exe, "jobs", "retention", "--base", a["base"].(string), "--summary-json", summary}
		if v, ok := a["catalog_file"]; ok {
			argv = append(argv, "--catalog-file", v.(string))
		}
		if v, ok := a["tables_config"]; ok {
			argv = append(argv, "--tables-config", v.(string))
		}
		if v, ok := a["hdfs_config"]; ok {
			argv = append(argv, "--hdfs-config", v.(string))
		}
		if v, ok := a["max_age"]; ok {
			argv = append(argv, "--max-age", v.(string))
		}
		if v, ok := a["topics"]; ok {
			m, _ := stringMap(v)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				argv = append(argv, "--topic-age", k+"="+m[k])
			}
		}
		return task{argv: argv}, nil
	}
	return task{}, fmt.Errorf("jobs: unknown kind %q", j.Kind)
}

// attemptResult is what one attempt of a run produced.
type attemptResult struct {
	summary  json.RawMessage
	err      error
	timedOut bool
}

// runAttempt runs t as a child process in its own process group, killing the
// whole group at timeout or when ctx ends, so that neither a hung job nor a
// crashed one can hold the scheduler. Pdeathsig kills the child if the
// scheduler itself dies, so a killed scheduler leaves no job running
// without its lock.
func runAttempt(ctx context.Context, t task, env []string, summaryFile string, timeout time.Duration) attemptResult {
	_ = os.Remove(summaryFile)
	defer os.Remove(summaryFile)
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Pdeathsig fires when the forking OS thread exits, not the process;
	// pinning this goroutine keeps that thread alive until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Dir = t.dir
	cmd.Env = append(append(os.Environ(), env...), t.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A grandchild that keeps the output pipe open must not block Wait.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return attemptResult{err: fmt.Errorf("start %s: %w", filepath.Base(t.argv[0]), err)}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-actx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-waited
	}
	// Reap stragglers of the group (a shell's background children).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	res := attemptResult{summary: readSummary(summaryFile, out.lastLine())}
	switch {
	case actx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		res.timedOut = true
		res.err = fmt.Errorf("%w after %v (process group killed)%s", ErrTimedOut, timeout, out.suffix())
	case ctx.Err() != nil:
		res.err = fmt.Errorf("cancelled: %v%s", context.Cause(ctx), out.suffix())
	case err != nil:
		res.err = fmt.Errorf("%s: %v%s", filepath.Base(t.argv[0]), err, out.suffix())
	}
	return res
}

// readSummary returns the JSON object in file, else the last output line if
// it is a JSON object (a job that reports on stdout), else nil.
func readSummary(file, lastLine string) json.RawMessage {
	if b, err := os.ReadFile(file); err == nil {
		b = bytes.TrimSpace(b)
		if len(b) > 0 && b[0] == '{' && json.Valid(b) {
			return b
		}
	}
	if l := strings.TrimSpace(lastLine); strings.HasPrefix(l, "{") && json.Valid([]byte(l)) {
		return json.RawMessage(l)
	}
	return nil
}

// tailBuffer keeps the last outputTail bytes written to it and the last
// complete line.
type tailBuffer struct {
	mu   sync.Mutex
	buf  []byte
	line []byte // current incomplete line
	last string
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > outputTail {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-outputTail:]...)
	}
	for _, c := range p {
		if c == '\n' {
			if s := strings.TrimSpace(string(b.line)); s != "" {
				b.last = s
			}
			b.line = b.line[:0]
			continue
		}
		if len(b.line) < 1<<20 {
			b.line = append(b.line, c)
		}
	}
	return len(p), nil
}

func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := strings.TrimSpace(string(b.line)); s != "" {
		return s
	}
	return b.last
}

// suffix is the output tail formatted for an error message.
func (b *tailBuffer) suffix() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	return "; output: " + s
}

var errNoExecutable = errors.New("jobs: no tributary executable")
