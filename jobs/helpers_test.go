package jobs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// newZK returns a connect string with a fresh chroot on the test ZooKeeper.
func newZK(t *testing.T) string {
	t.Helper()
	return zktest.Chroot(t, testenv.ZooKeeper(t), "jobs")
}

// newSession opens a session on connect, closed when t ends.
func newSession(t *testing.T, connect string) coord.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startScheduler runs an in-process scheduler on connect until t ends.
func startScheduler(t *testing.T, connect, id, yaml string) *Scheduler {
	t.Helper()
	list, err := ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Jobs: list, ID: id, Executable: testproc.Binary(t), PollInterval: 200 * time.Millisecond,
		Connect: func(ctx context.Context) (coord.Session, error) {
			return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 4 * time.Second})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("scheduler %s: %v", id, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("scheduler %s did not stop", id)
		}
	})
	return s
}

// proc is a `tributary ...` child process.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(testproc.Binary(t), args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.output())
		}
	})
	return p
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
