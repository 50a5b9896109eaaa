package partlog

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newLog opens a Log in a fresh temp dir (or dir, if given) and closes it at cleanup.
func newLog(t testing.TB, cfg Config, dir ...string) *Log {
	t.Helper()
	d := t.TempDir()
	if len(dir) > 0 {
		d = dir[0]
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	l, err := Open(d, cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", d, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// reopen closes l cleanly and opens its directory again.
func reopen(t testing.TB, l *Log, cfg Config) *Log {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return newLog(t, cfg, l.Dir())
}

// vals returns n distinct values tagged with a prefix.
func vals(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	r, err := l.Append(b)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return r
}

// readAll reads the view's bytes and releases it.
func readBytes(t testing.TB, l *Log, off int64, max int) []byte {
	t.Helper()
	v, err := l.Read(off, max)
	if err != nil {
		t.Fatalf("Read(%d, %d): %v", off, max, err)
	}
	defer v.Release()
	b, err := v.Bytes()
	if err != nil {
		t.Fatalf("View.Bytes: %v", err)
	}
	if int64(len(b)) != v.Len() {
		t.Fatalf("Bytes returned %d bytes, Len %d", len(b), v.Len())
	}
	return b
}

// readValues reads every record from offset from to the end, checking that
// offsets are consecutive.
func readValues(t testing.TB, l *Log, from int64) []string {
	t.Helper()
	var out []string
	next := from
	for next < l.EndOffset() {
		b := readBytes(t, l, next, 64<<10)
		if len(b) == 0 {
			t.Fatalf("empty read at %d below end %d", next, l.EndOffset())
		}
		offs, vs := logtest.Values(b)
		for i, o := range offs {
			if o < next {
				continue
			}
			if o != next {
				t.Fatalf("offset %d where %d expected", o, next)
			}
			out = append(out, string(vs[i]))
			next++
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var _ = bytes.Equal

// crash abandons l as a SIGKILL would: no sync, no marker, files left as
// they are in the page cache.
func crash(t testing.TB, l *Log) {
	t.Helper()
	l.crashForTest()
}

func (l *Log) crashForTest() {
	l.mu.Lock()
	l.closed = true
	l.shut.Store(true)
	close(l.stop)
	l.mu.Unlock()
	l.wg.Wait()
	l.releaseAll()
}
