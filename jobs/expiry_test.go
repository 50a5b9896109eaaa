package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
)

// TestSessionExpiryMidRun expires the ZooKeeper session of a scheduler
// while its job runs: the job's process group is killed (its lock is gone,
// so it must not go on), the run is recorded failed, and the scheduler
// carries on with a new session.
func TestSessionExpiryMidRun(t *testing.T) {
	zk := newZK(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	list, err := ParseConfig([]byte(fmt.Sprintf(`
jobs:
  - name: long
    schedule: %[1]s
    kind: exec
    args: {command: ["sh", "-c", "sleep 300 & echo $! > %[2]s; wait"]}
  - name: quick
    schedule: %[1]s
    kind: exec
    args: {command: ["true"]}
`, never, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sessions []*zkcoord.Session
	s, err := New(Config{Jobs: list, ID: "s1", Executable: testproc.Binary(t), PollInterval: 200 * time.Millisecond,
		Connect: func(ctx context.Context) (coord.Session, error) {
			sess, err := zkcoord.Connect(ctx, zk, zkcoord.Config{SessionTimeout: 4 * time.Second})
			if err == nil {
				mu.Lock()
				sessions = append(sessions, sess)
				mu.Unlock()
			}
			return sess, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	st := NewStore(newSession(t, zk), "", 0)
	var req string
	testenv.WaitFor(t, 30*time.Second, "job published", func() (bool, string) {
		req, err = st.Request(ctx, "long")
		return err == nil, ""
	})
	var pid int
	testenv.WaitFor(t, 30*time.Second, "long running", func() (bool, string) {
		r, _ := st.FindRequest(ctx, "long", req)
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return r != nil && r.Status == StatusRunning && pid > 0, ""
	})
	mu.Lock()
	first := sessions[0]
	mu.Unlock()
	if err := first.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	testenv.WaitFor(t, 30*time.Second, "the job's process group killed", func() (bool, string) { return syscall.Kill(pid, 0) != nil, "" })
	t.Logf("killed after %v", time.Since(t0))
	r, err := st.WaitRequest(ctx, "long", req, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s after %v", r.Status, time.Since(t0))
	if r.Status != StatusFailed || !strings.Contains(r.Error, "lost its ZooKeeper session") {
		t.Errorf("run after expiry: %+v", r)
	}
	r = requestRun(t, st, "quick", 30*time.Second)
	if r.Status != StatusSucceeded || r.Scheduler != "s1" {
		t.Errorf("run on the new session: %+v", r)
	}
	mu.Lock()
	n := len(sessions)
	mu.Unlock()
	if n < 2 {
		t.Errorf("%d sessions: want a new one after the expiry", n)
	}
}

// TestHistoryIsBounded keeps the last HistoryLimit runs.
func TestHistoryIsBounded(t *testing.T) {
	zk := newZK(t)
	list, err := ParseConfig([]byte("jobs:\n  - name: q\n    schedule: " + never + "\n    kind: exec\n    args: {command: [\"true\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Jobs: list, ID: "s1", HistoryLimit: 3, PollInterval: 100 * time.Millisecond,
		Connect: func(ctx context.Context) (coord.Session, error) { return zkcoord.Connect(ctx, zk, zkcoord.Config{}) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	st := NewStore(newSession(t, zk), "", 0)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, requestRun(t, st, "q", 30*time.Second).ID)
	}
	h, err := st.History(ctx, "q", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range h {
		got = append(got, r.ID)
	}
	// The newest run trims after its claim, so 3 records remain: the last 3.
	if strings.Join(got, ",") != strings.Join(ids[2:], ",") {
		t.Errorf("history %v, want the last 3 of %v", got, ids)
	}
}
