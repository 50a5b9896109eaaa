package icetable

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/icereader"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// The pace and bounds of TestSparkRewriteWhileAppending. A loader commits
// every few seconds; a writer committing much faster (every 300 ms) can
// starve the rewrite's commit, which Spark retries with back-off for up to
// 30 minutes. So the test appends when a round starts and then every
// appendEvery, at most appendsPerRound times a round, then lets the round
// finish.
const (
	rewriteRounds   = 3
	appendsPerRound = 3
	appendEvery     = 1500 * time.Millisecond
	// roundEndBound bounds the wait for a round to end once the appends
	// stop (a statement's own bound, icereader.SparkQueryTimeout, is
	// longer).
	roundEndBound = 6 * time.Minute
)

// rewriteRound is what one rewrite_data_files call gave.
type rewriteRound struct {
	rewritten int64
	err       error // Spark's error: the round lost the commit race
	took      time.Duration
}

// Spark's rewrite_data_files runs round after round while we keep
// appending: every record is in the table once, and Committed is exact.
func TestSparkRewriteWhileAppending(t *testing.T) {
	uri := testenv.HiveMetastore(t)
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	cat := newHiveCatalog(t, warehouse)
	ctx := testenv.Context(t, 15*time.Minute)
	tbl, err := cat.Table(ctx, "rw", "rw", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	appends := 0
	appendOne := func() {
		t.Helper()
		p := int32(0)
		if next[0] > next[1] {
			p = 1
		}
		if err := tbl.Append(ctx, simpleBatch(t, tbl, p, next[p], 5, fmt.Sprintf("o%d", next[0]+next[1]))); err != nil {
			t.Fatalf("append %d: %v", appends+1, err)
		}
		next[p] += 5
		appends++
	}
	for range 4 {
		appendOne()
	}

	sparkStart := time.Now()
	spark := icereader.NewSpark(t, icereader.HiveCatalog("ice", uri, warehouse))
	t.Logf("Spark %s started in %v", spark.Version, time.Since(sparkStart).Round(time.Millisecond))

	// The rounds run in a goroutine of their own, the only user of the
	// session, each when this one says begin, while this one appends. The
	// goroutine never blocks on a test that has given up (ended is
	// buffered; stop ends it), and gone closes when it ends, also if the
	// session dies and Query fails the test.
	begin := make(chan int)
	ended := make(chan rewriteRound, 1)
	stop, gone := make(chan struct{}), make(chan struct{})
	call := fmt.Sprintf("CALL ice.system.rewrite_data_files(table => '%s.rw', options => map('rewrite-all', 'true'))", cat.cfg.Namespace)
	go func() {
		defer close(gone)
		for {
			select {
			case <-stop:
				return
			case <-begin:
			}
			start := time.Now()
			res, err := spark.Query(call)
			r := rewriteRound{err: err, took: time.Since(start)}
			if err == nil && len(res.Rows) == 1 {
				n, ok := res.Rows[0]["rewritten_data_files_count"].(int32)
				if !ok {
					r.err = fmt.Errorf("rewrite_data_files gave %v", res.Rows[0])
				}
				r.rewritten = int64(n)
			} else if err == nil {
				r.err = fmt.Errorf("rewrite_data_files gave %d rows", len(res.Rows))
			}
			ended <- r
		}
	}()
	// Registered after NewSpark's cleanup, so run before it: a round
	// still running (the test gave up on it) ends with the session.
	t.Cleanup(func() {
		close(stop)
		spark.Close()
		select {
		case <-gone:
		case <-time.After(2 * time.Minute):
			t.Errorf("the rewrite rounds' goroutine did not end within 2m of the Spark session's close")
		}
	})

	var rewritten int64
	failed := 0
	for i := range rewriteRounds {
		select {
		case begin <- i:
		case <-gone:
			t.Fatalf("round %d: the Spark session failed (see above)", i+1)
		}
		// Append while the round runs, a few times at a loader's pace:
		// at once (a short round is done before a paced append), then
		// every appendEvery until the round ends.
		var r rewriteRound
		appendOne()
		done := false
		for k := 1; k < appendsPerRound && !done; k++ {
			select {
			case r = <-ended:
				done = true
			case <-time.After(appendEvery):
				appendOne()
			}
		}
		if !done {
			select {
			case r = <-ended:
			case <-gone:
				t.Fatalf("round %d: the Spark session failed (see above)", i+1)
			case <-time.After(roundEndBound):
				t.Fatalf("round %d: rewrite_data_files did not end within %v of the last append "+
					"(Spark retrying its commit?)", i+1, roundEndBound)
			}
		}
		switch {
		case errors.Is(r.err, icereader.ErrSpark):
			// Lost the commit race: Spark's own retries ran out.
			failed++
			t.Logf("round %d (%v) lost the race: %.300s", i+1, r.took.Round(time.Millisecond), r.err)
		case r.err != nil:
			t.Fatalf("round %d: %v", i+1, r.err)
		default:
			rewritten += r.rewritten
			t.Logf("round %d: %v, %d files rewritten, %d appends so far", i+1, r.took.Round(time.Millisecond), r.rewritten, appends)
		}
	}
	appendOne()
	if rewritten == 0 {
		t.Errorf("Spark rewrote no file")
	}

	got := pyRead(t, cat, "rw")
	total := next[0] + next[1]
	seen := map[[2]int64]bool{}
	for _, r := range got {
		k := r["_kafka"].(map[string]any)
		key := [2]int64{int64(k["partition"].(int32)), k["offset"].(int64)}
		if seen[key] {
			t.Errorf("record %v twice", key)
		}
		seen[key] = true
		if r["a"] != key[1]*10 {
			t.Errorf("record %v: a=%v", key, r["a"])
		}
	}
	if int64(len(got)) != total || int64(len(seen)) != total {
		t.Errorf("%d rows (%d distinct), want %d", len(got), len(seen), total)
	}
	c, err := tbl.Committed(ctx)
	if err != nil || c.Offsets[0] != next[0] || c.Offsets[1] != next[1] {
		t.Errorf("committed %+v, %v; want %v", c, err, next)
	}
	t.Logf("%d records in %d appends, Spark rewrote %d files (%d rounds lost the race), %d commit retries",
		total, appends, rewritten, failed, cat.Retries())
}
