package testproc

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// ListenTimeout bounds the wait for a broker's "broker listening" line
// (cluster brokers log it once they have joined and serve what they lead).
const ListenTimeout = 60 * time.Second

var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs the tests and removes the binary Binary built; call it as
// os.Exit(testproc.Main(m)) from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	return code
}

// MainParallel is Main with -test.parallel n unless the command line gives
// it: for packages whose parallel tests mostly wait (on child processes,
// clusters, NameNodes), not compute, so more than GOMAXPROCS at once.
func MainParallel(m *testing.M, n int) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
	return Main(m)
}

// EnvBinary names a tributary binary built from this checkout that Binary
// uses instead of building one: `make test` sets it to the bin/tributary
// its build step has just made, so that the packages running processes do
// not each link their own.
const EnvBinary = "TRIBUTARY_TEST_BINARY"

// Binary returns the path of a tributary binary built from this checkout,
// once per test binary (or EnvBinary's). It is built without the race
// detector: the child processes are the system under test; the race
// detector watches the test process.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if p := os.Getenv(EnvBinary); p != "" {
			if _, err := os.Stat(p); err != nil {
				binary.err = fmt.Errorf("%s=%s: %w (make build makes it)", EnvBinary, p, err)
			}
			binary.path = p
			return
		}
		dir, err := os.MkdirTemp("", "tributary-testproc")
		if err != nil {
			binary.err = err
			return
		}
		binary.dir = dir
		binary.path = filepath.Join(dir, "tributary")
		out, err := exec.Command("go", "build", "-o", binary.path, "github.com/tributary/tributary/cmd/tributary").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build cmd/tributary: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// WriteProperties writes props as a server.properties file (keys sorted,
// escaped by internal/properties) into dir and returns its path.
func WriteProperties(t testing.TB, dir, name string, props map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	if err := properties.Write(&b, props); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Broker is a `tributary broker` child process.
type Broker struct {
	// Addr is the address it listens on, from its "broker listening" line.
	Addr   string
	cmd    *exec.Cmd
	output SyncBuffer
	exited chan error
}

var (
	listeningLine = regexp.MustCompile(`msg="broker listening" addr=(\S+)`)
	listenerLine  = regexp.MustCompile(`msg="broker listening" addr=(\S+) listener=(\S+)`)
)

// StartBroker runs `tributary broker --config config args...` and waits
// until it listens. It fails t if the process exits first or does not
// listen within ListenTimeout.
func StartBroker(t testing.TB, config string, args ...string) *Broker {
	t.Helper()
	b := Launch(t, config, args...)
	if err := b.WaitListening(ListenTimeout); err != nil {
		t.Fatal(err)
	}
	return b
}

// Launch starts the broker without waiting for it to listen (for tests of
// start-up failures). The process is killed when t ends if still running.
func Launch(t testing.TB, config string, args ...string) *Broker {
	t.Helper()
	return launch(t, config, exec.Command(Binary(t), append([]string{"broker", "--config", config}, args...)...))
}

// StartBrokerWithNoFile is StartBroker with the process's RLIMIT_NOFILE
// (soft and hard) set to nofile from its start, through util-linux's
// prlimit(1), for tests of the descriptor budget.
func StartBrokerWithNoFile(t testing.TB, nofile int, config string, args ...string) *Broker {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) not found: %v", err)
	}
	argv := append([]string{fmt.Sprintf("--nofile=%d:%d", nofile, nofile), Binary(t), "broker", "--config", config}, args...)
	b := launch(t, config, exec.Command(prlimit, argv...))
	if err := b.WaitListening(ListenTimeout); err != nil {
		t.Fatal(err)
	}
	return b
}

func launch(t testing.TB, config string, cmd *exec.Cmd) *Broker {
	t.Helper()
	b := &Broker{cmd: cmd, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &b.output, &b.output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting broker: %v", err)
	}
	go func() { b.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if b.Running() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-b.exited
		}
		if t.Failed() {
			t.Logf("output of broker (%s):\n%s", config, b.Output())
		}
	})
	return b
}

// WaitListening waits up to d for the "broker listening" line and sets Addr.
func (b *Broker) WaitListening(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if m := listeningLine.FindStringSubmatch(b.output.String()); m != nil {
			b.Addr = m[1]
			return nil
		}
		if !b.Running() {
			return fmt.Errorf("broker exited before listening: %v\n%s", b.exitErr(), b.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("broker did not listen within %v:\n%s", d, b.Output())
}

// Listener returns the address of the broker's listener name (as in
// listeners=NAME://...) from its "broker listening" lines, "" until the
// broker has logged it. The broker logs every listener's line at once, the
// first one being Addr's.
func (b *Broker) Listener(name string) string {
	for _, m := range listenerLine.FindAllStringSubmatch(b.output.String(), -1) {
		if m[2] == name {
			return m[1]
		}
	}
	return ""
}

// Pid returns the process id (for /proc and prlimit in resource tests).
func (b *Broker) Pid() int { return b.cmd.Process.Pid }

// Output returns everything the process wrote so far.
func (b *Broker) Output() string { return b.output.String() }

// Running reports whether the process has not exited yet.
func (b *Broker) Running() bool {
	select {
	case err := <-b.exited:
		b.exited <- err
		return false
	default:
		return true
	}
}

func (b *Broker) exitErr() error {
	err := <-b.exited
	b.exited <- err
	return err
}

// Wait waits up to d for the process to exit and returns its exit error;
// it fails t if the process is still running then.
func (b *Broker) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case err := <-b.exited:
		b.exited <- err
		return err
	case <-time.After(d):
		t.Fatalf("broker still running after %v:\n%s", d, b.Output())
		return nil
	}
}

// Stop sends sig and waits (bounded) for the process to exit.
func (b *Broker) Stop(t testing.TB, sig syscall.Signal) error {
	t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil && b.Running() {
		t.Fatalf("signal %v: %v", sig, err)
	}
	return b.Wait(t, 30*time.Second)
}

// Signal sends sig to the process without waiting for anything.
func (b *Broker) Signal(sig syscall.Signal) error { return b.cmd.Process.Signal(sig) }

// Pause stops the process with SIGSTOP: it keeps its sockets and its
// ZooKeeper session (until the server expires it) but runs nothing, which
// is how a broker looks during a long GC pause or a hung disk. The kernel
// still accepts connections and buffers requests for it. A paused process
// is still killed when its test ends (SIGKILL ends stopped processes).
//
// Pause returns once every thread of the process is stopped: kill(2)
// returns before the threads running on other CPUs have stopped, and a
// thread of a "paused" broker was seen answering a request sent after
// Pause returned.
func (b *Broker) Pause(t testing.TB) {
	t.Helper()
	pid := b.cmd.Process.Pid
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !allThreadsStopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("SIGSTOP: process %d still has running threads after 30 s", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// allThreadsStopped reports whether every thread of pid is in state T
// (stopped) per /proc/<pid>/task/<tid>/stat.
func allThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold spaces or parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			return false
		}
	}
	return true
}

// Resume continues a paused process with SIGCONT.
func (b *Broker) Resume(t testing.TB) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
}

// SyncBuffer collects a process's output while tests read it; safe for
// concurrent use (exported for tests that run other programs).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *SyncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *SyncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// KilledBySIGKILL reports whether err, from waiting for a child process,
// says SIGKILL ended it.
func KilledBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// RunCrashable runs `tributary args...` (Binary) with env added to the
// test's environment and waits for it: killed reports whether SIGKILL ended
// it (a crash-injection hook such as compact.EnvCrashAt fired), out is its
// combined output. Any other failure fails t.
func RunCrashable(t testing.TB, env []string, args ...string) (killed bool, out string) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if KilledBySIGKILL(err) {
		return true, string(b)
	}
	if err != nil {
		t.Fatalf("tributary %v: %v\n%s", args, err, b)
	}
	return false, string(b)
}
