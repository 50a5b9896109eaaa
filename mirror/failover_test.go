package mirror

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/testproc"
	"github.com/tributary/tributary/mirror/checkpoint"
)

// pollUntil polls cl until at least n records came (or fails after d),
// returning them.
func pollUntil(t *testing.T, cl *kgo.Client, n int, d time.Duration) []*kgo.Record {
	t.Helper()
	ctx := testenv.Context(t, d)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records after %v", len(out), n, d)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestFailoverResumesExactlyAfterTheLastCommit: a kgo consumer group
// processes pageviews on dc1 and commits; it goes on processing without
// committing; dc1's broker stops. The same group on dc2, on
// dc1.pageviews, resumes at the first record after its last commit on
// dc1 in every partition: every record after the commit is processed, the
// only repeats are those it processed after the commit, each once. The
// source's log starts at a different offset per partition, so target
// offsets differ from source offsets. The checkpoints are MirrorMaker 2's
// records in dc1.checkpoints.internal.
func TestFailoverResumesExactlyAfterTheLastCommit(t *testing.T) {
	const total = 3000
	dc1, dc2 := newCluster(t, "dc1"), newCluster(t, "dc2")
	dc1.CreateTopicWithConfigs(t, "pageviews", 3, nil)
	want := newProduced()
	src := dc1.Client(t)
	want.produce(t, src, "dc1", "pageviews", 3, 0, total)
	// Source offsets no longer start at 0, and differently per partition.
	ctx := testenv.Context(t, 80*time.Second)
	del := kadm.Offsets{}
	for p := range int32(3) {
		del.Add(kadm.Offset{Topic: "pageviews", Partition: p, At: int64(50 * (p + 1))})
	}
	if _, err := kadm.NewClient(src).DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Sources:            []SourceConfig{{Name: "dc1", Brokers: []string{dc1.Addr()}}},
		TargetBrokers:      []string{dc2.Addr()},
		TargetName:         "dc2",
		Topics:             "pageviews",
		GroupID:            "mirror-dc1-dc2",
		ReplicationPolicy:  DefaultReplicationPolicy,
		CheckpointInterval: time.Second,
		SyncGroupOffsets:   true,
		CommitInterval:     500 * time.Millisecond,
		ShutdownTimeout:    5 * time.Second,
		AuditDisable:       true,
	}
	stopMirror := runMirror(t, cfg, nil)

	// The application on dc1: processes, commits, processes more.
	app := dc1.Client(t, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("pageviews"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	before := pollUntil(t, app, 1200, time.Minute)
	if err := app.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed := map[int32]int64{}
	for _, r := range before {
		committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
	}
	after := pollUntil(t, app, 300, time.Minute) // processed, never committed
	app.Close()
	processedAfter := map[srcPos]int{}
	for _, r := range after {
		processedAfter[srcPos{"dc1", r.Partition, r.Offset}]++
	}
	logStart := map[int32]int64{0: 50, 1: 100, 2: 150}
	had := len(committed) // partitions with a commit; the others have no checkpoint
	for p := range int32(3) {
		if _, ok := committed[p]; !ok {
			committed[p] = logStart[p] // nothing committed there: on dc2 the group starts at the beginning, as on dc1
		}
	}

	// The mirror copies everything and checkpoints the commit; only then
	// is dc1 lost (a commit later than the last checkpoint would be
	// repeated from the previous one: checkpoints run every interval).
	reader := readTarget(t, dc2, "dc1.pageviews")
	testenv.WaitFor(t, time.Minute, "every record on dc2", func() (bool, string) {
		got, _ := reader.counts()
		return got >= total-300, fmt.Sprintf("%d of %d", got, total-300)
	})
	tadm := kadm.NewClient(dc2.Client(t))
	testenv.WaitFor(t, 30*time.Second, "the group's offsets synced to dc2", func() (bool, string) {
		got, err := tadm.FetchOffsets(ctx, "app")
		if err != nil {
			return false, err.Error()
		}
		n := 0
		got.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "dc1.pageviews" && o.Err == nil && o.At == committed[o.Partition]-logStart[o.Partition] {
				n++
			}
		})
		return n == had, fmt.Sprintf("%v, want source %v minus %v", got, committed, logStart)
	})
	checkTranslateCommand(t, dc1, dc2, committed, logStart, had)
	dc1.Stop(t, 1)
	_ = stopMirror()

	// MirrorMaker 2's checkpoint records say the same.
	cps := readCheckpoints(t, dc2, "dc1.checkpoints.internal", "app")
	if len(cps) != had {
		t.Errorf("checkpoints of %d partitions, want %d: %v", len(cps), had, cps)
	}
	for p, cp := range cps {
		if cp.Topic != "dc1.pageviews" || cp.Upstream != committed[p] || cp.Downstream != committed[p]-logStart[p] {
			t.Errorf("checkpoint of partition %d: %+v, want upstream %d downstream %d", p, cp, committed[p], committed[p]-logStart[p])
		}
	}

	// The application fails over to dc2.
	failed := dc2.Client(t, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("dc1.pageviews"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	wantAfter := 0
	for p := range int32(3) {
		wantAfter += int(want.perPart[srcPos{"dc1", p, 0}] - committed[p]) // offsets start at 0 on the producer's side
	}
	got := pollUntil(t, failed, wantAfter, time.Minute)
	seen := map[srcPos]int{}
	first := map[int32]int64{}
	for _, r := range got {
		o, err := recordOrigin(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[o.partition]; !ok {
			first[o.partition] = o.offset
		}
		if o.offset < committed[o.partition] {
			t.Fatalf("dc2 gave %v, which the group had committed on dc1 (committed %v)", o, committed)
		}
		seen[o]++
	}
	for p := range int32(3) {
		if want.perPart[srcPos{"dc1", p, 0}] == committed[p] {
			continue // processed to the end on dc1: nothing to resume
		}
		if first[p] != committed[p] {
			t.Errorf("partition %d resumed at source offset %d, want %d (its last commit)", p, first[p], committed[p])
		}
	}
	repeats := 0
	for o, n := range seen {
		if n != 1 {
			t.Errorf("%v processed %d times on dc2", o, n)
		}
		if processedAfter[o] > 0 {
			repeats++
		}
	}
	if len(seen) != wantAfter || repeats != len(after) {
		t.Errorf("dc2: %d distinct records (want %d), %d repeats (want the %d processed after the commit)", len(seen), wantAfter, repeats, len(after))
	}
	t.Logf("committed %v on dc1; dc2 resumed at %v; %d records repeated (processed after the commit), none lost", committed, first, repeats)
}

// readCheckpoints reads a checkpoints topic of c, keeping group's latest
// checkpoint per partition.
func readCheckpoints(t *testing.T, c *cluster, topic, group string) map[int32]checkpoint.Checkpoint {
	t.Helper()
	out := map[int32]checkpoint.Checkpoint{}
	for _, r := range readToEnd(t, c, topic) {
		cp, err := checkpoint.Parse(r.Key, r.Value)
		if err != nil {
			t.Fatalf("%s at %d: %v", topic, r.Offset, err)
		}
		if cp.Group == group {
			out[cp.Partition] = cp
		}
	}
	if len(out) == 0 {
		t.Fatalf("no checkpoint of group %s in %s", group, topic)
	}
	return out
}

// readToEnd reads topic of c from its start to its end offsets of now.
func readToEnd(t *testing.T, c *cluster, topic string) []*kgo.Record {
	t.Helper()
	ends := endOffsets(t, c, topic)
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	defer cl.Close()
	ctx := testenv.Context(t, 30*time.Second)
	pos := map[int32]int64{}
	var out []*kgo.Record
	for !reached(pos, ends) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (at %v of %v)", topic, ctx.Err(), pos, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			out = append(out, r)
		})
	}
	return out
}

// checkTranslateCommand runs `tributary mirror translate` and checks its
// lines: each committed partition's source offset, its exact target
// offset, and the lag to the target's end.
func checkTranslateCommand(t *testing.T, dc1, dc2 *cluster, committed, logStart map[int32]int64, had int) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "mirror.properties")
	props := fmt.Sprintf("source.dc1.bootstrap.servers=%s\ntarget.bootstrap.servers=%s\ntarget.name=dc2\ntopics=pageviews\n"+
		"group.id=mirror-dc1-dc2\nreplication.policy.class=%s\n", dc1.Addr(), dc2.Addr(), DefaultReplicationPolicy)
	if err := os.WriteFile(conf, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testproc.Binary(t), "mirror", "translate", "--config", conf, "--source", "dc1", "--group", "app", "--topic", "pageviews").CombinedOutput()
	if err != nil {
		t.Fatalf("mirror translate: %v\n%s", err, out)
	}
	ends := endOffsets(t, dc2, "dc1.pageviews")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != had+1 || !strings.HasPrefix(lines[0], "TOPIC") {
		t.Fatalf("mirror translate printed:\n%s\nwant a header and %d partitions", out, had)
	}
	for _, line := range lines[1:] {
		var topic, target string
		var p int32
		var src, off, lag int64
		if _, err := fmt.Sscan(line, &topic, &p, &src, &target, &off, &lag); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		want := committed[p] - logStart[p]
		if topic != "pageviews" || target != "dc1.pageviews" || src != committed[p] || off != want || lag != ends[p]-want {
			t.Errorf("line %q, want pageviews %d %d dc1.pageviews %d %d", line, p, committed[p], want, ends[p]-want)
		}
	}
	t.Logf("mirror translate:\n%s", out)
}
