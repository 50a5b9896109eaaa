package partlog

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

func TestFlushAdvancesRecoveryPoint(t *testing.T) {
	l := newLog(t, Config{FlushIntervalMessages: 10})
	for i := range 25 {
		mustAppend(t, l, logtest.NewBatch(fmt.Appendf(nil, "%d", i)))
	}
	if rp := readRecoveryPoint(l.Dir()); rp != 20 {
		t.Fatalf("recovery point %d after 25 records with a flush every 10", rp)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := readRecoveryPoint(l.Dir()); rp != 25 {
		t.Fatalf("recovery point %d after Flush", rp)
	}
}

func TestFlushByTime(t *testing.T) {
	l := newLog(t, Config{FlushInterval: 20 * time.Millisecond})
	mustAppend(t, l, logtest.NewBatch([]byte("a")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for readRecoveryPoint(l.Dir()) != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("the flush loop never advanced the recovery point")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestUncleanRecoveryScansOnlyTail: after a crash, segments below the
// recovery point are not read (their indexes are left alone), the tail is
// scanned and a torn last batch is cut off.
func TestUncleanRecoveryScansOnlyTail(t *testing.T) {
	cfg := Config{SegmentBytes: 600, IndexIntervalBytes: 100}
	l := newLog(t, cfg)
	var want []string
	for i := range 60 {
		v := fmt.Sprintf("v%d", i)
		mustAppend(t, l, logtest.NewBatch([]byte(v)))
		want = append(want, v)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 60; i < 65; i++ {
		mustAppend(t, l, logtest.NewBatch([]byte(fmt.Sprintf("v%d", i))))
		want = append(want, fmt.Sprintf("v%d", i))
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	crash(t, l)
	if rp := readRecoveryPoint(l.Dir()); rp > active.base {
		t.Fatalf("recovery point %d inside the active segment %d", rp, active.base)
	}
	// Tear the last batch and break the index of the first segment, which
	// recovery must not even look at.
	path := segmentPath(l.Dir(), active.base, logSuffix)
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentPath(l.Dir(), 0, indexSuffix), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = newLog(t, cfg, l.Dir())
	if l.EndOffset() != 64 {
		t.Fatalf("end %d after recovery, want 64 (last batch torn)", l.EndOffset())
	}
	if b, _ := os.ReadFile(segmentPath(l.Dir(), 0, indexSuffix)); string(b) != "garbage" {
		t.Fatal("recovery touched a segment below the recovery point")
	}
	if got := readValues(t, l, 0); !equalStrings(got, want[:64]) {
		t.Fatalf("after recovery: %q", got)
	}
	// Reading the first segment rebuilt its index.
	if b, _ := os.ReadFile(segmentPath(l.Dir(), 0, indexSuffix)); string(b) == "garbage" {
		t.Fatal("bad index not rebuilt on use")
	}
	r := mustAppend(t, l, logtest.NewBatch([]byte("next")))
	if r.BaseOffset != 64 {
		t.Fatalf("append after recovery at %d", r.BaseOffset)
	}
}

// TestOpenManyPartitions: a clean open must not scan segments. 200 here to
// keep the suite fast (file creation is slow on some CI disks); the budget is
// scaled from "1,000 well under a second". BenchmarkOpen1000 does 1,000.
// TestOpenManyPartitions opens many cleanly closed partitions and checks
// each; how long that takes is BenchmarkOpen1000's business, not a test's.
func TestOpenManyPartitions(t *testing.T) {
	openMany(t, 200)
}

func openMany(t testing.TB, parts int) time.Duration {
	root := t.TempDir()
	cfg := Config{Logger: quietLogger(), SegmentBytes: 300}
	// One real partition, copied: a thousand closes would be a thousand
	// rounds of fsyncs.
	src := newLog(t, cfg)
	for i := range 3 {
		mustAppend(t, src, logtest.NewBatch(vals(fmt.Sprint(i), 10)...))
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		dst := fmt.Sprintf("%s/t-%d", root, p)
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(src.Dir() + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst+"/"+e.Name(), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	logs := make([]*Log, parts)
	syncDir(root) // settle the copies before timing
	for p := range parts {
		l, err := Open(fmt.Sprintf("%s/t-%d", root, p), cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs[p] = l
	}
	took := time.Since(start)
	for _, l := range logs {
		if l.EndOffset() != 30 || len(*l.segs.Load()) < 2 {
			t.Fatalf("end %d, %d segments", l.EndOffset(), len(*l.segs.Load()))
		}
		l.crashForTest()
	}
	t.Logf("opened %d partitions in %v", parts, took)
	return took
}

// BenchmarkOpen1000 opens 1,000 cleanly closed partitions of a few segments each.
func BenchmarkOpen1000(b *testing.B) {
	for b.Loop() {
		took := openMany(b, 1000)
		b.ReportMetric(float64(took.Milliseconds()), "ms/1000-partitions")
	}
}
