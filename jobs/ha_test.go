package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestTwoSchedulersKillOne runs two `tributary jobs serve` processes on one
// ZooKeeper chroot with a job due every 2 s, SIGKILLs the one running the
// job in the middle of a run, and checks from the history and from the
// job's own side effects that every due time ran exactly once across the
// two, that the killed run was marked failed after the session expired,
// and that the survivor took over.
func TestTwoSchedulersKillOne(t *testing.T) {
	zk := newZK(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "ran")
	cfg := writeFile(t, dir, "jobs.yaml", fmt.Sprintf(`
jobs:
  - name: tick
    schedule: "@every 2s"
    kind: exec
    args: {command: ["sh", "-c", "echo \"$TRIBUTARY_JOB_SCHEDULED_AT $TRIBUTARY_JOB_SCHEDULER\" >> %s; sleep 1"]}
    timeout: 30s
`, log))
	procs := map[string]*proc{}
	for _, id := range []string{"A", "B"} {
		procs[id] = startProc(t, "jobs", "serve", "--config", cfg, "--zookeeper", zk, "--id", id,
			"--zookeeper-session-timeout", "4s", "--log-level", "debug")
	}
	st := NewStore(newSession(t, zk), "", 0)
	ctx := context.Background()

	// Phase 1: both serve; wait for a few runs, then catch one running.
	var victim, survivor string
	var killedRun string
	testenv.WaitFor(t, 60*time.Second, "5 runs and one running", func() (bool, string) {
		h, _ := st.History(ctx, "tick", 0)
		if len(h) < 6 || h[len(h)-1].Status != StatusRunning {
			return false, ""
		}
		victim, killedRun = h[len(h)-1].Scheduler, h[len(h)-1].ID
		return true, ""
	})
	survivor = "A"
	if victim == "A" {
		survivor = "B"
	}
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	t.Logf("killed %s during run %s", victim, killedRun)

	// Phase 2: the survivor marks the killed run failed once the victim's
	// session expires, and runs the following due times.
	testenv.WaitFor(t, 60*time.Second, "killed run marked failed and 4 runs by the survivor after it", func() (bool, string) {
		h, _ := st.History(ctx, "tick", 0)
		var failed bool
		var after int
		for _, r := range h {
			if r.ID == killedRun && r.Status == StatusFailed && strings.Contains(r.Error, "lost its ZooKeeper session") {
				failed = true
			}
			if r.ScheduledAt.After(killedAt) && r.Status == StatusSucceeded && r.Scheduler == survivor {
				after++
			}
		}
		return failed && after >= 4, ""
	})
	// Pause, let the run going on end, and stop the survivor.
	if err := st.Pause(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "no run going on", func() (bool, string) {
		h, _ := st.History(ctx, "tick", 1)
		return len(h) == 1 && h[0].Status != StatusRunning, ""
	})
	if err := procs[survivor].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-procs[survivor].exited:
	case <-time.After(30 * time.Second):
		t.Fatal("survivor did not stop on SIGTERM")
	}

	h, err := st.History(ctx, "tick", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every due time from the first to the last has exactly one record.
	for i := 1; i < len(h); i++ {
		if gap := h[i].ScheduledAt.Sub(h[i-1].ScheduledAt); gap != 2*time.Second {
			t.Errorf("runs %s and %s are %v apart, want every due time once (2s)", h[i-1].ID, h[i].ID, gap)
		}
	}
	// The job's side effects: one line per run that started, written by
	// the scheduler its record names, and none for skipped runs.
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	sort.Strings(lines)
	var want []string
	statuses := map[Status]int{}
	bySched := map[string]int{}
	for _, r := range h {
		statuses[r.Status]++
		if r.Status == StatusSkipped {
			// Skipped while the killed run's lock was held, or missed by
			// both schedulers (a starved machine).
			if r.StartedAt != nil || !strings.Contains(r.Error, killedRun) && !strings.HasPrefix(r.Error, "missed") {
				t.Errorf("skipped run %+v: want no start and the held lock's run named", r)
			}
			continue
		}
		if r.Status == StatusRunning {
			t.Errorf("run %s still running after the schedulers stopped", r.ID)
		}
		bySched[r.Scheduler]++
		want = append(want, r.ScheduledAt.Format(time.RFC3339Nano)+" "+r.Scheduler)
	}
	sort.Strings(want)
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("job side effects:\n%s\nwant (from history):\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if statuses[StatusFailed] != 1 {
		t.Errorf("statuses %v: want exactly the killed run failed", statuses)
	}
	t.Logf("%d runs: %v; by scheduler %v", len(h), statuses, bySched)
}
