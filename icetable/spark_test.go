package icetable

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// icebergJar is the iceberg-spark-runtime jar scripts/install-deps.sh puts
// in the repository's .cache.
func icebergJar(t *testing.T) string {
	t.Helper()
	jar, err := filepath.Abs(filepath.Join("..", ".cache", "iceberg", "iceberg-spark-runtime-3.5_2.12-1.10.0.jar"))
	if err == nil {
		_, err = os.Stat(jar)
	}
	if err != nil {
		t.Fatalf("iceberg-spark-runtime jar: %v (scripts/install-deps.sh fetches it)", err)
	}
	return jar
}

// Spark's rewrite_data_files runs round after round while we keep
// appending: every record is in the table once, and Committed is exact.
func TestSparkRewriteWhileAppending(t *testing.T) {
	py := needEnv(t, "TRIBUTARY_TEST_PYTHON")
	cat := newHiveCatalog(t, "file://"+filepath.Join(t.TempDir(), "warehouse"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tbl, err := cat.Table(ctx, "rw", "rw", mustSchema(t, simpleSchema))
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	appendOne := func() {
		p := int32(0)
		if next[0] > next[1] {
			p = 1
		}
		if err := tbl.Append(ctx, simpleBatch(t, tbl, p, next[p], 5, "o"+strconv.FormatInt(next[0]+next[1], 10))); err != nil {
			t.Fatal(err)
		}
		next[p] += 5
	}
	for range 4 {
		appendOne()
	}
	cmd := exec.CommandContext(ctx, py, "testdata/spark_rewrite.py", cat.cfg.URI, icebergJar(t), t.TempDir(),
		cat.cfg.Namespace+".rw", "3")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	rewritten, failed, started := 0, 0, false
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			var r struct {
				Ready     bool
				Rewritten int
				Failed    string
			}
			if json.Unmarshal([]byte(l), &r) == nil {
				started = started || r.Ready
				rewritten += r.Rewritten
				if r.Failed != "" {
					failed++
					t.Logf("a rewrite lost the race: %s", r.Failed)
				}
			}
		case <-tick.C:
			// A loader commits every few seconds; faster than this,
			// Spark's 4 commit retries rarely win.
			if started {
				appendOne()
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("spark: %v\n%s", err, stderr.String())
	}
	appendOne()
	if rewritten == 0 {
		t.Errorf("Spark rewrote no file")
	}
	got := pyRead(t, cat, "rw")
	total := next[0] + next[1]
	seen := map[[2]float64]bool{}
	for _, r := range got.Rows {
		k := r["_kafka"].(map[string]any)
		key := [2]float64{k["partition"].(float64), k["offset"].(float64)}
		if seen[key] {
			t.Errorf("record %v twice", key)
		}
		seen[key] = true
		if r["a"] != key[1]*10 {
			t.Errorf("record %v: a=%v", key, r["a"])
		}
	}
	if int64(len(got.Rows)) != total || int64(len(seen)) != total {
		t.Errorf("%d rows (%d distinct), want %d", len(got.Rows), len(seen), total)
	}
	c, err := tbl.Committed(ctx)
	if err != nil || c.Offsets[0] != next[0] || c.Offsets[1] != next[1] {
		t.Errorf("committed %+v, %v; want %v", c, err, next)
	}
	t.Logf("%d records in %d appends, Spark rewrote %d files (%d rounds lost the race), %d commit retries", total, total/5, rewritten, failed, cat.Retries())
}
