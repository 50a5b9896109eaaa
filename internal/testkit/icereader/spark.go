package icereader

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

//go:embed scripts/spark.py
var sparkScript string

// Bounds on a Spark session's start (one JVM, 12-30 s on a quiet machine)
// and on one statement.
const (
	SparkStartTimeout = 5 * time.Minute
	SparkQueryTimeout = 10 * time.Minute
)

// Spark is a local Spark 3.5 session (PySpark 3.5.9 of the
// TRIBUTARY_TEST_PYTHON virtualenv) with Iceberg 1.10's runtime and SQL
// extensions (CALL cat.system.rewrite_data_files(...), expire_snapshots,
// ...), its catalogs those of NewSpark. Spark SQL names a table
// catalog.namespace.table; the catalogs do not cache tables, so every
// statement sees the latest commit of any writer. A Spark belongs to its
// test's goroutine: it is not safe for concurrent use.
type Spark struct {
	// Version is Spark's version ("3.5.9").
	Version string

	t      testing.TB
	cancel context.CancelFunc
	stdin  io.WriteCloser
	lines  chan string
	exited chan struct{}
	stderr tailBuffer
	closed bool
}

// NewSpark starts a Spark session with the catalogs cats and stops it when
// t ends (or at Close). One session per test: its start costs a JVM's
// (12-30 s, about 450 MB). A SQL catalog is read through Iceberg's
// JdbcCatalog on the SQLite file. Fails t, naming `make deps`, if PySpark
// or the jars are missing.
func NewSpark(t testing.TB, cats ...Catalog) *Spark {
	t.Helper()
	py := python(t, "pyspark")
	jars := sparkJars(t)
	settings := map[string]string{}
	for _, c := range cats {
		for k, v := range c.sparkSettings() {
			settings[k] = v
		}
	}
	conf, err := json.Marshal(map[string]any{"scratch": t.TempDir(), "jars": jars, "settings": settings})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := testenv.PythonCommand(ctx, py, "-c", encodeScript+sparkScript)
	s := &Spark{t: t, cancel: cancel, lines: make(chan string, 16), exited: make(chan struct{})}
	cmd.Stderr = &s.stderr
	// The JVM, PySpark's child, holds stderr too: do not wait for it long
	// once Python is gone (it exits when its stdin, from Python, closes).
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start Spark: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		cmd.Wait()
		close(s.lines)
		close(s.exited)
	}()
	t.Cleanup(s.Close)
	if _, err := s.stdin.Write(append(conf, '\n')); err != nil {
		t.Fatalf("start Spark: %v", err)
	}
	version, err := s.await("READY ", SparkStartTimeout)
	if err != nil {
		t.Fatalf("start Spark: %v", err)
	}
	s.Version = version
	return s
}

// SQL runs one Spark SQL statement and returns its result (none for DDL;
// for a CALL, the procedure's). Rows are maps by column name: alias
// columns that share a name. Fails t on any error.
func (s *Spark) SQL(query string) Result {
	s.t.Helper()
	res, err := s.Query(query)
	if err != nil {
		s.t.Fatal(err)
	}
	return res
}

// Query runs one Spark SQL statement; a statement Spark rejects returns an
// error wrapping ErrSpark, and the session goes on. Fails t if the session
// is gone.
func (s *Spark) Query(query string) (Result, error) {
	s.t.Helper()
	if s.closed {
		s.t.Fatalf("spark: query after Close: %s", query)
	}
	req, err := json.Marshal(map[string]string{"sql": query})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.stdin.Write(append(req, '\n')); err != nil {
		s.t.Fatalf("spark: %s: %v\n%s", query, err, s.stderr.tail())
	}
	line, err := s.await("RESULT |ERROR ", SparkQueryTimeout)
	if err != nil {
		s.t.Fatalf("spark: %s: %v", query, err)
	}
	if msg, ok := strings.CutPrefix(line, "ERROR "); ok {
		var text string
		if json.Unmarshal([]byte(msg), &text) != nil {
			text = msg
		}
		return Result{}, fmt.Errorf("%w: %s: %s", ErrSpark, query, text)
	}
	res, err := decodeResult([]byte(strings.TrimPrefix(line, "RESULT ")))
	if err != nil {
		s.t.Fatalf("spark: %s: %v", query, err)
	}
	return res, nil
}

// await returns the rest of the session's next line that starts with one
// of prefixes ("|"-separated; for "RESULT " and "ERROR ", the whole line).
func (s *Spark) await(prefixes string, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				<-s.exited
				return "", fmt.Errorf("the Spark session ended\nstderr (tail): %s", s.stderr.tail())
			}
			for _, p := range strings.Split(prefixes, "|") {
				if strings.HasPrefix(line, p) {
					if p == "READY " {
						return strings.TrimPrefix(line, p), nil
					}
					return line, nil
				}
			}
		case <-timer.C:
			return "", fmt.Errorf("no answer within %v\nstderr (tail): %s", timeout, s.stderr.tail())
		}
	}
}

// Close stops the session (Spark's own stop, bounded, then a kill) and
// waits until its process is gone. Idempotent; also run when t ends.
func (s *Spark) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.stdin.Close()
	kill := time.NewTimer(time.Minute)
	defer kill.Stop()
	for open := true; open; {
		select {
		case _, open = <-s.lines:
		case <-kill.C:
			s.cancel()
		}
	}
	<-s.exited
	s.cancel()
}

// ReadSpark reads table ("namespace.table") of cat with SELECT * in a Spark
// session of its own, closed before it returns: for a test that reads once.
func ReadSpark(t testing.TB, cat Catalog, table string) Result {
	t.Helper()
	s := NewSpark(t, cat)
	defer s.Close()
	return s.SQL("SELECT * FROM " + cat.Name + "." + table)
}

// tailBuffer keeps the last 64 KiB written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 64<<10; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.buf)
	if len(s) > 6000 {
		s = s[len(s)-6000:]
	}
	return s
}
