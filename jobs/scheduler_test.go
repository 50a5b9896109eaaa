package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// never is a schedule that is not due during a test: runs come from requests.
const never = `"0 0 0 1 1 *"`

// requestRun asks for a run of job and waits for its end.
func requestRun(t *testing.T, st *Store, job string, wait time.Duration) *Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait+30*time.Second)
	defer cancel()
	var req string
	// The scheduler publishes its jobs once connected.
	testenv.WaitFor(t, 30*time.Second, "job "+job+" published", func() (bool, string) {
		r, err := st.Request(ctx, job)
		req = r
		return err == nil, ""
	})
	r, err := st.WaitRequest(ctx, job, req, wait)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRetriesTimeoutAndErrorText(t *testing.T) {
	zk := newZK(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "sleeper.pid")
	startScheduler(t, zk, "s1", fmt.Sprintf(`
jobs:
  - name: flaky
    schedule: %[1]s
    kind: exec
    args: {command: ["sh", "-c", "if [ $TRIBUTARY_JOB_ATTEMPT -lt 3 ]; then echo boom-$TRIBUTARY_JOB_ATTEMPT >&2; exit 3; fi; echo '{\"records\": 7}'"]}
    retries: 2
    retry_backoff: 100ms
  - name: broken
    schedule: %[1]s
    kind: exec
    args: {command: ["sh", "-c", "echo broken-$TRIBUTARY_JOB_ATTEMPT >&2; exit 1"]}
    retries: 1
    retry_backoff: 100ms
  - name: hang
    schedule: %[1]s
    kind: exec
    args: {command: ["sh", "-c", "sleep 300 & echo $! > %[2]s; wait"]}
    timeout: 1s
`, never, pidFile))
	st := NewStore(newSession(t, zk), "", 0)

	r := requestRun(t, st, "flaky", time.Minute)
	if r.Status != StatusSucceeded || r.Attempts != 3 || string(r.Summary) != `{"records":7}` || r.Error != "" {
		t.Errorf("flaky run = %+v, want succeeded at attempt 3 with its summary", r)
	}

	r = requestRun(t, st, "broken", time.Minute)
	if r.Status != StatusFailed || r.Attempts != 2 {
		t.Errorf("broken run = %+v, want failed after 2 attempts", r)
	}
	for _, want := range []string{"attempt 1", "broken-1", "attempt 2", "broken-2", "exit status 1"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("broken run's error %q lacks %q", r.Error, want)
		}
	}

	start := time.Now()
	r = requestRun(t, st, "hang", time.Minute)
	if r.Status != StatusTimedOut || !strings.Contains(r.Error, "timed out after 1s") {
		t.Errorf("hang run = %+v, want timed_out", r)
	}
	if d := r.EndedAt.Sub(*r.StartedAt); d < time.Second || time.Since(start) > 45*time.Second {
		t.Errorf("hang run lasted %v", d)
	}
	// The whole process group was killed, the shell's background sleep too.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	testenv.WaitFor(t, 10*time.Second, "sleeper killed", func() (bool, string) { return syscall.Kill(pid, 0) != nil, "" })

	// History shows every run, oldest first.
	h, err := st.History(context.Background(), "broken", 0)
	if err != nil || len(h) != 1 || h[0].ID != r.ID && h[0].Status != StatusFailed {
		t.Errorf("history of broken: %+v, %v", h, err)
	}
}

func TestSkippedWhileRunningPauseResume(t *testing.T) {
	zk := newZK(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	startScheduler(t, zk, "s1", fmt.Sprintf(`
jobs:
  - name: slow
    schedule: "@every 1s"
    kind: exec
    args: {command: ["sh", "-c", "echo $TRIBUTARY_JOB_SCHEDULED_AT >> %s; sleep 2.5"]}
  - name: witness
    schedule: "@every 1s"
    kind: exec
    args: {command: ["true"]}
`, log))
	st := NewStore(newSession(t, zk), "", 0)
	ctx := context.Background()
	var runs []Run
	testenv.WaitFor(t, 60*time.Second, "two finished runs and a skipped one", func() (bool, string) {
		runs, _ = st.History(ctx, "slow", 0)
		var done, skipped int
		for _, r := range runs {
			switch r.Status {
			case StatusSucceeded:
				done++
			case StatusSkipped:
				skipped++
				if !strings.Contains(r.Error, "still running") {
					t.Fatalf("skipped run without the reason: %+v", r)
				}
			}
		}
		return done >= 2 && skipped >= 2, ""
	})
	// No two runs overlapped: each started after the previous one ended.
	var prevEnd time.Time
	for _, r := range runs {
		if r.Status == StatusSucceeded {
			if r.StartedAt.Before(prevEnd) {
				t.Errorf("run %s started at %v before the previous ended at %v", r.ID, r.StartedAt, prevEnd)
			}
			prevEnd = *r.EndedAt
		}
	}

	if err := st.Pause(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	// Once the run going on ends, nothing new starts while paused.
	var n int
	testenv.WaitFor(t, 30*time.Second, "quiet while paused", func() (bool, string) {
		h, _ := st.History(ctx, "slow", 0)
		if len(h) == 0 || h[len(h)-1].Status == StatusRunning {
			return false, ""
		}
		n = len(h)
		return true, ""
	})
	// Three due times pass, as the witness job running on them shows.
	w0, _ := st.History(ctx, "witness", 0)
	testenv.WaitFor(t, 30*time.Second, "3 due times of the witness", func() (bool, string) {
		w, _ := st.History(ctx, "witness", 0)
		return len(w) >= len(w0)+3, ""
	})
	if h, _ := st.History(ctx, "slow", 0); len(h) != n {
		t.Errorf("paused job got %d new runs", len(h)-n)
	}
	list, err := st.List(ctx, time.Now())
	if err != nil || len(list) != 2 || list[0].Name != "slow" || !list[0].Paused || list[0].Next != nil || list[1].Paused || list[1].Next == nil {
		t.Errorf("list while paused: %+v, %v", list, err)
	}
	if err := st.Resume(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "a run after resume", func() (bool, string) {
		h, _ := st.History(ctx, "slow", 0)
		return len(h) > n, ""
	})
}

// TestMissedDueTimesAreRecorded: a scheduler that wakes after several due
// times claims the latest and records the others skipped as missed.
func TestMissedDueTimesAreRecorded(t *testing.T) {
	zk := newZK(t)
	list, err := ParseConfig([]byte("jobs:\n  - name: m\n    schedule: \"@every 1s\"\n    kind: exec\n    args: {command: [\"true\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, zk)
	st := NewStore(sess, "", 0)
	ctx := context.Background()
	if err := st.Publish(ctx, list[0].Spec); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Jobs: list, ID: "late", Executable: "/nonexistent",
		Connect: func(context.Context) (coord.Session, error) { return sess, nil }})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	missed := []time.Time{now.Add(-3 * time.Second), now.Add(-2 * time.Second), now.Add(-time.Second)}
	// Another scheduler ran the middle one.
	if _, err := st.recordSkipped(ctx, &Run{ID: runID(missed[1], ""), Job: "m", ScheduledAt: missed[1], Status: StatusSucceeded, Scheduler: "other"}); err != nil {
		t.Fatal(err)
	}
	s.tmpDir = t.TempDir()
	s.scheduled(ctx, st, list[0], now, missed, s.log)
	s.wg.Wait()
	h, err := st.History(ctx, "m", 0)
	if err != nil || len(h) != 4 {
		t.Fatalf("history %+v, %v", h, err)
	}
	for i, want := range []string{"skipped late missed", "succeeded other ", "skipped late missed", "succeeded late "} {
		got := fmt.Sprintf("%s %s %s", h[i].Status, h[i].Scheduler, strings.Fields(h[i].Error + " x")[0])
		if !strings.HasPrefix(got, strings.TrimSpace(want)) || !h[i].ScheduledAt.Equal(append(missed, now)[i]) {
			t.Errorf("run %d: %s at %v, want %q", i, got, h[i].ScheduledAt, want)
		}
	}
}
