package testenv

import (
	"context"
	"testing"
	"time"
)

// Context returns a context cancelled after d or when t's cleanup runs,
// whichever comes first: the one bound of a test's blocking calls, so that
// no test hangs. Unlike t.Context(), it is still live in the cleanups
// registered after it (they run before its cancel).
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
