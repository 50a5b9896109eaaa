package loader

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CrashEnv names the test hook: when set to a step number, the loader
// process kills itself with SIGKILL the first time it reaches that step of
// a commit, so tests can check recovery from a crash at every step.
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

// crashStep parses the hook: "N" kills at the first time step N is
// reached, "N:K" at the K-th time.
func crashStep() (step, nth int) {
	v := os.Getenv(CrashEnv)
	s, k, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, 0
	}
	nth = 1
	if ok {
		if nth, err = strconv.Atoi(k); err != nil {
			return 0, 0
		}
	}
	return n, nth
}

func (l *Loader) crash(step int) {
	if l.crashAt != step {
		return
	}
	if l.crashSeen.Add(1) == int64(l.crashNth) {
		l.log.Info("test hook: killing the process", "step", step)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not handled; never go on
	}
}
