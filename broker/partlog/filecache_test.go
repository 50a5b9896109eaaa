package partlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/partlog/logtest"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting descriptors: %v", err)
	}
	return len(ents) - 1 // the directory being read
}

// openSegmentFiles counts descriptors this process holds on files under dir.
func openSegmentFiles(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && len(target) > len(dir) && target[:len(dir)] == dir {
			n++
		}
	}
	return n
}

// TestDescriptorBudget: many partitions with many segments each hold no
// more descriptors than the shared cache's capacity, whatever is read or
// written; a View keeps its file open while the cache churns; every record
// reads back in order.
func TestDescriptorBudget(t *testing.T) {
	const partitions, capacity = 60, 8
	root := t.TempDir()
	files := NewFileCache(capacity, 2)
	t.Cleanup(files.Close)
	cfg := Config{SegmentBytes: 300, IndexIntervalBytes: 100, Files: files}
	logs := make([]*Log, partitions)
	for i := range logs {
		logs[i] = newLog(t, cfg, filepath.Join(root, fmt.Sprintf("t-%d", i)))
	}
	want := make([][]string, partitions)
	for round := range 8 {
		for i, l := range logs {
			vs := vals(fmt.Sprintf("p%d-r%d", i, round), 2)
			mustAppend(t, l, logtest.NewBatch(vs...))
			for _, v := range vs {
				want[i] = append(want[i], string(v))
			}
		}
	}
	for _, l := range logs {
		if err := l.Flush(); err != nil { // also waits for the rolls' background syncs
			t.Fatal(err)
		}
	}
	if got := openSegmentFiles(t, root); got > capacity {
		t.Fatalf("%d segment files open after writing %d partitions, cache capacity %d", got, partitions, capacity)
	}
	segs := len(*logs[0].segs.Load())
	if segs < 3 {
		t.Fatalf("only %d segments per partition; the test wants old segments", segs)
	}
	// Hold a View of an old segment of partition 0, then read everything.
	held, err := logs[0].Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		if got := readValues(t, l, 0); !equalStrings(got, want[i]) {
			t.Fatalf("partition %d read %q, want %q", i, got, want[i])
		}
	}
	if got := openSegmentFiles(t, root); got > capacity+1 {
		t.Fatalf("%d segment files open after reading, capacity %d plus one held View", got, capacity)
	}
	st := files.Stats()
	if st.Evictions == 0 {
		t.Fatalf("no evictions: %+v", st)
	}
	b, err := held.Bytes()
	if err != nil {
		t.Fatalf("held View after %d evictions: %v", st.Evictions, err)
	}
	if _, vs := logtest.Values(b); len(vs) == 0 || string(vs[0]) != want[0][0] {
		t.Fatalf("held View reads %q", vs)
	}
	held.Release()
	t.Logf("%d partitions x %d segments: %d segment descriptors open (capacity %d); %+v",
		partitions, segs, openSegmentFiles(t, root), capacity, st)
}

// TestDescriptorsPerPartition measures what one idle partition and one old
// segment cost in descriptors: nothing beyond the cache's slots.
func TestDescriptorsPerPartition(t *testing.T) {
	root := t.TempDir()
	files := NewFileCache(1, 0)
	cfg := Config{SegmentBytes: 200, Files: files}
	const n = 50
	for i := range n {
		l := newLog(t, cfg, filepath.Join(root, strconv.Itoa(i)))
		for j := range 5 {
			mustAppend(t, l, logtest.NewBatch(vals(fmt.Sprint(i, j), 3)...))
		}
		if err := l.Flush(); err != nil { // waits for the rolls' background syncs
			t.Fatal(err)
		}
	}
	held := openSegmentFiles(t, root)
	if held > 1 {
		t.Fatalf("%d partitions of several segments hold %d descriptors, want at most the cache's 1", n, held)
	}
	t.Logf("descriptors held: %d for %d partitions of %d segments (%.3f per partition; none per old segment beyond the cache's capacity)",
		held, n, 5, float64(held)/n)
}

// withNoFileLimit sets the soft RLIMIT_NOFILE for the test and restores it.
func withNoFileLimit(t *testing.T, soft uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = soft
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring RLIMIT_NOFILE: %v", err)
		}
	})
}

// TestOutOfDescriptors: with the process at its descriptor limit, a new
// partition fails with ErrNoDescriptors, open partitions keep appending and
// reading, a roll and Close (with their checkpoints and index files) still
// succeed through the reserve, and once descriptors are free again a new
// partition opens.
func TestOutOfDescriptors(t *testing.T) {
	root := t.TempDir()
	files := NewFileCache(100, 8)
	t.Cleanup(files.Close)
	cfg := Config{SegmentBytes: 400, Files: files, Logger: quietLogger()}
	var logs []*Log
	for i := range 5 {
		l, err := Open(filepath.Join(root, strconv.Itoa(i)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
		mustAppend(t, l, logtest.NewBatch([]byte(fmt.Sprint("first-", i))))
	}
	// Fill every free descriptor number below a limit just above what is
	// open now: the process is then out of descriptors.
	withNoFileLimit(t, uint64(openFDs(t)+16))
	var filler []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		filler = append(filler, f)
	}
	defer func() {
		for _, f := range filler {
			f.Close()
		}
	}()

	_, err := Open(filepath.Join(root, "new"), cfg)
	if !errors.Is(err, ErrNoDescriptors) {
		t.Fatalf("Open of a new partition out of descriptors: %v, want ErrNoDescriptors", err)
	}
	// Open partitions still serve, and roll (the batch overflows 400 bytes).
	for i, l := range logs {
		mustAppend(t, l, logtest.NewBatch(vals(fmt.Sprint("second-", i), 20)...))
		got := readValues(t, l, 0)
		if len(got) != 21 || got[0] != fmt.Sprint("first-", i) || got[20] != fmt.Sprint("second-", i, "-19") {
			t.Fatalf("partition %d reads %q", i, got)
		}
	}
	if segs := len(*logs[0].segs.Load()); segs < 2 {
		t.Fatalf("no roll happened (%d segments)", segs)
	}
	// Close writes snapshot, index files, recovery point and marker.
	if err := logs[0].Close(); err != nil {
		t.Fatalf("Close out of descriptors: %v", err)
	}
	if _, err := os.Stat(cleanShutdownPath(logs[0].Dir())); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	for _, l := range logs[1:] {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if st := files.Stats(); st.Failures == 0 {
		t.Fatalf("no failure counted: %+v", st)
	}
	// Descriptors come back: a new partition opens, the reserve refills.
	for _, f := range filler {
		f.Close()
	}
	filler = nil
	l := newLog(t, cfg, filepath.Join(root, "new"))
	mustAppend(t, l, logtest.NewBatch([]byte("after")))
	if !files.Replenish() {
		t.Fatalf("reserve not refilled: %+v", files.Stats())
	}
	l0 := newLog(t, cfg, logs[0].Dir())
	if got := readValues(t, l0, 0); len(got) != 21 {
		t.Fatalf("reopened partition 0 reads %d records", len(got))
	}
}

// TestPartitionsUnderDescriptorLimit opens more partitions than the
// process's RLIMIT_NOFILE and serves a produce and a read on each: an idle
// partition holds no descriptor. Scaled to 250 partitions under a limit
// of 250 (each Close fsyncs several files); TRIBUTARY_FULL=1 runs 20,000
// under 20,000.
func TestPartitionsUnderDescriptorLimit(t *testing.T) {
	n := 250
	if os.Getenv("TRIBUTARY_FULL") != "" {
		n = 20000
	}
	withNoFileLimit(t, uint64(n))
	files := NewFileCache(n/2, 16)
	t.Cleanup(files.Close)
	root := t.TempDir()
	cfg := Config{Files: files, Logger: quietLogger()}
	logs := make([]*Log, n)
	for i := range logs {
		l, err := Open(filepath.Join(root, strconv.Itoa(i)), cfg)
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
		logs[i] = l
		mustAppend(t, l, logtest.NewBatch([]byte(strconv.Itoa(i))))
	}
	for i, l := range logs {
		_, vs := logtest.Values(readBytes(t, l, 0, 1<<20))
		if len(vs) != 1 || string(vs[0]) != strconv.Itoa(i) {
			t.Fatalf("partition %d reads %q", i, vs)
		}
	}
	t.Logf("%d partitions served under RLIMIT_NOFILE %d: %d descriptors open, %d segment files cached (capacity %d)",
		n, n, openFDs(t), files.Stats().Open, files.Stats().Capacity)
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRemovedSegmentNeverReopensItsPath is the race behind a failure of
// TestTruncateConcurrentReaders ("fresh view holds bad bytes: magic 0"): a
// reader holds a reference to a segment whose cached file is closed (idle,
// evicted), TruncateTo removes the segment and starts a new active segment
// with the same base offset, and only then does the reader open the
// segment's file. Opening by path would read the new segment's bytes at the
// old segment's positions; the removed segment must answer errSegmentGone.
func TestRemovedSegmentNeverReopensItsPath(t *testing.T) {
	dir := t.TempDir()
	files := NewFileCache(1, 0)
	defer files.Close()
	var gaps atomic.Bool
	old, err := createSegment(dir, 100, 4096, time.Now(), files, useOrdinary, &gaps)
	if err != nil {
		t.Fatal(err)
	}
	if !old.acquire() { // the reader's reference, taken before the cut
		t.Fatal("acquire of a live segment failed")
	}
	// Another segment takes the only slot: old's idle file is closed.
	other, err := createSegment(dir, 200, 4096, time.Now(), files, useOrdinary, &gaps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.openFile(useOrdinary); err != nil {
		t.Fatal(err)
	}
	other.file.release()
	if got := files.Stats().Evictions; got == 0 {
		t.Fatalf("old's file was not evicted (stats %+v): the test needs it closed", files.Stats())
	}
	if err := old.remove(); err != nil {
		t.Fatal(err)
	}
	// TruncateTo's new active segment, same base offset, same path.
	fresh, err := createSegment(dir, 100, 4096, time.Now(), files, useOrdinary, &gaps)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.release()
	// The reader passed openFile's deleted check before remove ran; what
	// it does next is acquire the handle.
	if f, err := old.file.acquire(useOrdinary); !errors.Is(err, errSegmentGone) {
		if f != nil {
			old.file.release()
		}
		t.Fatalf("removed segment's file acquired again (err %v): it would read %s, the new segment", err, segmentPath(dir, 100, logSuffix))
	}
	old.release()
}
