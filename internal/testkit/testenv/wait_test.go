package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runWait runs WaitFor on a recorder in a goroutine of its own and returns
// what it failed with ("" if it returned).
func runWait(t *testing.T, d time.Duration, cond func() (bool, string)) string {
	t.Helper()
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(r, d, "the thing", cond)
	}()
	<-done
	return r.msg
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	msg := runWait(t, time.Minute, func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprintf("call %d", calls)
	})
	if msg != "" || calls != 3 {
		t.Fatalf("WaitFor failed with %q after %d calls; want a return on call 3", msg, calls)
	}
}

func TestWaitForFailsWithTheLastState(t *testing.T) {
	calls := 0
	start := time.Now()
	msg := runWait(t, 300*time.Millisecond, func() (bool, string) {
		calls++
		return false, fmt.Sprintf("call %d", calls)
	})
	took := time.Since(start)
	want := fmt.Sprintf("timed out after 300ms waiting for the thing; last state: call %d", calls)
	if msg != want {
		t.Fatalf("WaitFor failed with %q, want %q", msg, want)
	}
	// Backing off from 10 ms, 300 ms hold a handful of calls, not hundreds.
	if calls < 3 || calls > 12 || took > 2*time.Second {
		t.Fatalf("%d calls in %v", calls, took)
	}
}

func TestWaitForWithoutStateNamesWhatOnly(t *testing.T) {
	msg := runWait(t, 50*time.Millisecond, func() (bool, string) { return false, "" })
	if msg != "timed out after 50ms waiting for the thing" || strings.Contains(msg, "last state") {
		t.Fatalf("WaitFor failed with %q", msg)
	}
}
