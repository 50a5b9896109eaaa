package icetable

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// crashEnv names the Config (JSON) and step of a child process that dies.
const crashEnv = "ICETABLE_CRASH_CHILD"

type crashChild struct {
	Config Config
	Step   string // "before-commit" or "after-commit"
}

// TestCrashChild is the child of TestSIGKILL: it appends offsets 0..9,
// then 10..19 and is SIGKILLed at the step.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("the child of TestSIGKILL")
	}
	var c crashChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cat, err := Open(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.Table(ctx, "crash", "crash", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, 0, 10, "first")); err != nil {
		t.Fatal(err)
	}
	kill := func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	switch c.Step {
	case "before-commit":
		tbl.beforeCommit = func(int) { kill() }
	case "after-commit":
		tbl.afterCommit = func(_ int, err error) error {
			if err == nil {
				kill()
			}
			return err
		}
	}
	tbl.Append(ctx, simpleBatch(t, tbl, 0, 10, 10, "second"))
	t.Fatal("not killed")
}

// A process SIGKILLed with its data files written but not committed, or
// right after the catalog commit, leaves a table that the next process
// resumes exactly: every offset once.
func TestSIGKILL(t *testing.T) {
	for _, step := range []string{"before-commit", "after-commit"} {
		t.Run(step, func(t *testing.T) {
			cat := newCatalog(t, nil)
			spec, _ := json.Marshal(crashChild{Config: cat.cfg, Step: step})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnv+"="+string(spec))
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want SIGKILL\n%s", err, out)
			}
			// The next process resumes from the table.
			tbl, err := cat.Table(ctx, "crash", "crash", mustSchema(t, simpleSchema))
			if err != nil {
				t.Fatal(err)
			}
			c, err := tbl.Committed(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{"before-commit": 10, "after-commit": 20}[step]
			if c.Offsets[0] != want {
				t.Fatalf("committed %d after a kill %s, want %d", c.Offsets[0], step, want)
			}
			if err := tbl.Append(ctx, simpleBatch(t, tbl, 0, c.Offsets[0], 30-c.Offsets[0], "resumed")); err != nil {
				t.Fatal(err)
			}
			got := pyRead(t, cat, "crash")
			if len(got) != 30 {
				t.Fatalf("%d rows, want 30", len(got))
			}
			for i, r := range got {
				if o := r["_kafka"].(map[string]any)["offset"]; o != int64(i) || r["a"] != int64(10*i) {
					t.Fatalf("row %d: offset %v a %v", i, o, r["a"])
				}
			}
		})
	}
}
