package loader

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CrashEnv names the environment variable by which the command and the
// tests' child processes set Config.CrashAt (ParseCrashPoint's format);
// the library itself never reads the environment.
const CrashEnv = "TRIBUTARY_LOADER_CRASH_AT"

// The steps of a commit, in order (see doc.go). Frozen: tests name them.
const (
	StepWriting         = 1 // data files open and partly written
	StepFilesClosed     = 2 // data files closed, manifest not written
	StepManifestWritten = 3 // manifest written under its temporary name
	StepCommitted       = 4 // manifest renamed into place: the commit point
	StepFirstMove       = 5 // first data file moved, others not yet
	StepMoved           = 6 // all files moved, audit not published
	StepPublished       = 7 // audit published, not marked so
	StepMarked          = 8 // audit marked published, old manifests not pruned
	NumSteps            = 8
)

// CrashPoint is the crash test hook: the loader process kills itself with
// SIGKILL the Nth time (1 when zero) it reaches Step of a commit, so tests
// can check recovery from a crash at every step. Step 0 is off.
type CrashPoint struct {
	Step int `json:"step,omitempty"`
	Nth  int `json:"nth,omitempty"`
}

// ParseCrashPoint parses "N" (step N, first time) or "N:K" (K-th time);
// "" is off.
func ParseCrashPoint(s string) (CrashPoint, error) {
	if s == "" {
		return CrashPoint{}, nil
	}
	step, nth, ok := strings.Cut(s, ":")
	var c CrashPoint
	var err error
	if c.Step, err = strconv.Atoi(step); err != nil || c.Step < 1 || c.Step > NumSteps {
		return CrashPoint{}, fmt.Errorf("%w: crash point %q: step must be 1..%d", ErrInvalidConfig, s, NumSteps)
	}
	if ok {
		if c.Nth, err = strconv.Atoi(nth); err != nil || c.Nth < 1 {
			return CrashPoint{}, fmt.Errorf("%w: crash point %q: count must be positive", ErrInvalidConfig, s)
		}
	}
	return c, nil
}

func (l *Loader) crash(step int) {
	at := l.cfg.CrashAt
	if at.Step != step {
		return
	}
	if l.crashSeen.Add(1) == int64(max(at.Nth, 1)) {
		l.log.Info("test hook: killing the process", "step", step)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not handled; never go on
	}
}
