package testenv

import (
	"fmt"
	"io"
	"testing"
)

// TestLogWriterDropsWritesAfterCleanup: a write after the test ended
// (testing.T panics on such a Log) is dropped, not a panic.
func TestLogWriterDropsWritesAfterCleanup(t *testing.T) {
	var w io.Writer
	t.Run("inner", func(t *testing.T) {
		w = LogWriter(t)
		fmt.Fprintln(w, "during the test")
	})
	if n, err := fmt.Fprintln(w, "after the test"); err != nil || n != len("after the test\n") {
		t.Fatalf("write after cleanup: %d, %v", n, err)
	}
}
