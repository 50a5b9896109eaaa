package testenv

import (
	"testing"
	"time"
)

// Poll intervals of WaitFor: the first retry comes soon, so that a
// condition about to hold costs little; later ones back off, so that a
// long wait does not spin on a shared machine.
const (
	waitFirstPoll = 10 * time.Millisecond
	waitMaxPoll   = 200 * time.Millisecond
)

// WaitFor calls cond until it reports true and returns how long that took.
// cond also returns the state it saw ("2 of 3 brokers"); if cond has not
// held after d, WaitFor fails t with what and the last such state. Between
// calls it sleeps 10 ms, doubling up to 200 ms.
//
// This is the one bounded wait of the tests: a test waits for a condition,
// never for a fixed time. Call it from the test's goroutine (it calls
// t.Fatalf).
func WaitFor(t testing.TB, d time.Duration, what string, cond func() (ok bool, state string)) time.Duration {
	t.Helper()
	start := time.Now()
	poll := waitFirstPoll
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) >= d {
			if state == "" {
				t.Fatalf("timed out after %v waiting for %s", d, what)
			}
			t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, state)
		}
		time.Sleep(poll)
		poll = min(2*poll, waitMaxPoll)
	}
}
