package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binaryOnce builds cmd/tributary once per test binary, for the tests that
// run the broker as a separate process.
var binaryOnce struct {
	sync.Once
	path string
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryOnce.dir != "" {
		os.RemoveAll(binaryOnce.dir)
	}
	os.Exit(code)
}

// tributaryBinary returns the path of a freshly built tributary binary.
func tributaryBinary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tributary-broker-test")
		if err != nil {
			binaryOnce.err = err
			return
		}
		binaryOnce.dir = dir
		binaryOnce.path = filepath.Join(dir, "tributary")
		cmd := exec.Command("go", "build", "-o", binaryOnce.path, "../cmd/tributary")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binaryOnce.err = fmt.Errorf("go build ../cmd/tributary: %v\n%s", err, out)
		}
	})
	if binaryOnce.err != nil {
		t.Fatal(binaryOnce.err)
	}
	return binaryOnce.path
}

// brokerProcess is `tributary broker` running as a child process.
type brokerProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	exited chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listeningLine = regexp.MustCompile(`msg="broker listening" addr=(\S+)`)

// writeProperties writes a server.properties file for a child broker.
func writeProperties(t testing.TB, props map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# written by the broker tests\n")
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBrokerProcess runs the broker binary on config and waits until it
// listens. It is killed at test end if still running.
func startBrokerProcess(t testing.TB, config string, args ...string) *brokerProcess {
	t.Helper()
	bin := tributaryBinary(t)
	cmd := exec.Command(bin, append([]string{"broker", "--config", config}, args...)...)
	pr, pw := io.Pipe()
	p := &brokerProcess{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = io.MultiWriter(pw, p.stderr)
	cmd.Stdout = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting broker: %v", err)
	}
	go func() { p.exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case p.addr = <-found:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("broker exited before listening: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("broker did not listen within 30s:\n%s", p.stderr)
	}
	return p
}

// stop signals the process and waits for it to exit.
func (p *brokerProcess) stop(t testing.TB, sig syscall.Signal) error {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case err := <-p.exited:
		return err
	case <-ctx.Done():
		t.Fatalf("broker did not exit within 30s of %v:\n%s", sig, p.stderr)
		return nil
	}
}
