package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process may take to exit after SIGTERM before
// it is SIGKILLed.
const stopGrace = 45 * time.Second

// restartDelay is how long the supervisor waits before restarting a
// process that exited on its own.
const restartDelay = time.Second

// proc is one supervised OS process of the soak: started from its command
// line, restarted when it exits unless a fault (or the end) took it down.
type proc struct {
	name   string
	args   []string // args[0] is the program
	env    []string // added to the soak's own environment
	log    string   // its stdout and stderr, appended across restarts
	ready  func(ctx context.Context) error
	logger *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd ended
	down     bool          // taken down on purpose: do not restart
	closing  bool
	restarts int // unplanned restarts by the supervisor
	kills    int
	samples  []sample
}

// sample is one reading of a process's resources from /proc.
type sample struct {
	at      time.Time
	pid     int
	rssKiB  int64
	fds     int
	started time.Time // of the incarnation sampled
}

// start launches the process (not waiting for ready).
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *proc) startLocked() error {
	if p.cmd != nil && !isClosed(p.exited) {
		return nil
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "\n==== soak: %s start %s\n", p.name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group (a Ctrl-C of the soak reaches the soak only,
	// which then stops everything in order), and dead with the soak.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the forking OS thread exits, not the
		// process: this goroutine keeps that thread until the child ends.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			f.Close()
			started <- fmt.Errorf("start %s: %w", p.name, err)
			return
		}
		started <- nil
		err := cmd.Wait()
		f.Close()
		close(exited)
		p.mu.Lock()
		restart := !p.down && !p.closing && p.cmd == cmd
		p.mu.Unlock()
		if restart {
			go p.supervise(cmd, err)
		}
	}()
	if err := <-started; err != nil {
		return err
	}
	p.cmd, p.exited, p.down = cmd, exited, false
	return nil
}

// supervise restarts a process that exited on its own.
func (p *proc) supervise(cmd *exec.Cmd, status error) {
	p.logger.Warn("soak: process exited on its own; restarting it", "process", p.name, "status", status, "log", p.log,
		"last_line", lastLine(p.log))
	time.Sleep(restartDelay)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down && !p.closing && p.cmd == cmd {
		p.restarts++
		if err := p.startLocked(); err != nil {
			p.logger.Error("soak: restart failed", "process", p.name, "err", err)
		}
	}
}

// waitReady runs the readiness check, bounded by d.
func (p *proc) waitReady(ctx context.Context, d time.Duration) error {
	if p.ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := p.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v (log %s)", p.name, d, err, p.log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pid returns the running process's id, 0 if it is not running.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill SIGKILLs the process and waits until it is gone; it stays down
// until start.
func (p *proc) kill() error {
	p.mu.Lock()
	p.down = true
	p.kills++
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return fmt.Errorf("%s is not running", p.name)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	return nil
}

// signal sends sig (SIGSTOP, SIGCONT) to the running process.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return fmt.Errorf("%s is not running", p.name)
	}
	return cmd.Process.Signal(sig)
}

// stop ends the process for good: SIGTERM, SIGKILL after stopGrace.
func (p *proc) stop() error {
	p.mu.Lock()
	p.closing = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
			return fmt.Errorf("%s: %v at its stop (log %s)", p.name, cmd.ProcessState, p.log)
		}
		return nil
	case <-time.After(stopGrace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("%s did not stop within %v of SIGTERM; SIGKILLed (log %s)", p.name, stopGrace, p.log)
	}
}

// sample reads the running process's RSS and descriptors.
func (p *proc) sample(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return
	}
	s, err := readProc(p.cmd.Process.Pid)
	if err != nil {
		return
	}
	s.at = now
	if n := len(p.samples); n > 0 && p.samples[n-1].pid == s.pid {
		s.started = p.samples[n-1].started
	} else {
		s.started = now
	}
	p.samples = append(p.samples, s)
}

// readProc reads VmRSS and the descriptor count of pid from /proc.
func readProc(pid int) (sample, error) {
	s := sample{pid: pid}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKiB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	return s, nil
}

// childOf returns the pid of a running child of parent whose command line
// contains all of words, 0 if none.
func childOf(parent int, words ...string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != strconv.Itoa(parent) || f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return pid
		}
	}
	return 0
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// script runs one of the repository's scripts to completion, its output
// appended to log; ctx bounds it.
func script(ctx context.Context, log string, env []string, args ...string) (string, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n==== soak: %s %s\n", strings.Join(args, " "), time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = f
	out, err := cmd.Output()
	f.Write(out)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), fmt.Errorf("%s: %v (log %s)", strings.Join(args, " "), err, log)
		}
		return string(out), err
	}
	return string(out), nil
}

// lastLine is the last non-empty line of the file at path (at most its
// final 4 KiB are read), "" if there is none: why a process exited.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4<<10)
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(buf)) {
		if _, err := f.Seek(fi.Size()-int64(len(buf)), io.SeekStart); err != nil {
			return ""
		}
	}
	n, _ := io.ReadFull(f, buf)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	return lines[len(lines)-1]
}
