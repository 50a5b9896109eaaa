package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// alterReplicaLogDir sends one AlterReplicaLogDirs entry to broker id and
// returns its error code (straight to the broker: kgo would route it by
// partition leader and answer for an unknown topic itself).
func alterReplicaLogDir(t *testing.T, cl *kgo.Client, id int32, dir, topic string, p int32) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	d.Topics = append(d.Topics, rt)
	req.Dirs = append(req.Dirs, d)
	kresp, err := cl.Broker(int(id)).Request(testenv.Context(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	resp := kresp.(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("AlterReplicaLogDirs: %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// logDirsOf returns, per log dir, the DescribeLogDirs entries of topic-p.
func logDirsOf(t *testing.T, cl *kgo.Client, topic string, p int32) map[string]kmsg.DescribeLogDirsResponseDirTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testenv.Context(t, 30*time.Second), cl)
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	out := map[string]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, d := range resp.Dirs {
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				if dt.Topic == topic && dp.Partition == p {
					out[d.Dir] = dp
				}
			}
		}
	}
	return out
}

// TestAlterReplicaLogDirs moves a partition between the two log.dirs of a
// broker while a producer writes to it, with the copy throttled by
// replica.alter.log.dirs.io.max.bytes.per.second (no faster than it, and
// caught up since it outpaces the producer): DescribeLogDirs shows the
// future replica in the target with its size and lag, then the replica
// only there; every acknowledged record reads back with its value, and
// neither dir keeps a -future or -delete directory. A dir that is not in
// log.dirs is LOG_DIR_NOT_FOUND; a replica the broker does not have is
// REPLICA_NOT_AVAILABLE.
func TestAlterReplicaLogDirs(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	b := newTestBroker(t, func(c *config.Config) { c.LogDirs = dirs })
	ctx := testenv.Context(t, 2*time.Minute)
	cl := newClient(t, b.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	const topic = "moving"
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	testenv.WaitFor(t, 30*time.Second, topic+" served", func() (bool, string) { return b.partitions.Replica(topic, 0) != nil, "" })
	source := filepath.Dir(b.partitions.Replica(topic, 0).Dir())
	target := dirs[0]
	if filepath.Clean(target) == source {
		target = dirs[1]
	}

	acked := map[string]string{}
	var mu sync.Mutex
	produce := func(from, n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < from+n; i++ {
			k := fmt.Sprint("k-", i)
			v := k
			if from < 10000 {
				v = strings.Repeat(k, 1000/len(k))
			}
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Errorf("produce: %v", err)
			return
		}
		mu.Lock()
		for _, r := range rs {
			acked[string(r.Key)] = string(r.Value)
		}
		mu.Unlock()
	}
	for i := 0; i < 20; i++ {
		produce(i*500, 500) // about 10 MB
	}

	if code := alterReplicaLogDir(t, cl, b.cfg.BrokerID, filepath.Join(t.TempDir(), "elsewhere"), topic, 0); code != kerr.LogDirNotFound.Code {
		t.Fatalf("a dir outside log.dirs: code %d, want LOG_DIR_NOT_FOUND", code)
	}
	if code := alterReplicaLogDir(t, cl, b.cfg.BrokerID, target, "nosuchtopic", 0); code != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("an unknown replica: code %d, want REPLICA_NOT_AVAILABLE", code)
	}

	// The copy must outpace the producer below, one small record at a
	// time, to catch up.
	setDefaultBrokerConfig(t, ctx, b, adm, "replica.alter.log.dirs.io.max.bytes.per.second", kadm.StringPtr("5000000"))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 10000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			produce(i, 1)
		}
	}()
	start := time.Now()
	if code := alterReplicaLogDir(t, cl, b.cfg.BrokerID, target, topic, 0); code != 0 {
		t.Fatalf("AlterReplicaLogDirs: code %d", code)
	}
	var sawFuture kmsg.DescribeLogDirsResponseDirTopicPartition
	testenv.WaitFor(t, 30*time.Second, "a future replica in "+target, func() (bool, string) {
		got := logDirsOf(t, cl, topic, 0)
		sawFuture = got[target]
		return sawFuture.IsFuture && sawFuture.Size > 0 && !got[source].IsFuture, fmt.Sprintf("%+v", got)
	})
	t.Logf("future replica: %d bytes, %d offsets behind", sawFuture.Size, sawFuture.OffsetLag)
	testenv.WaitFor(t, time.Minute, "the replica only in "+target, func() (bool, string) {
		got := logDirsOf(t, cl, topic, 0)
		_, inSource := got[source]
		return len(got) == 1 && !got[target].IsFuture && !inSource, fmt.Sprintf("%+v", got)
	})
	took := time.Since(start)
	close(stop)
	<-done
	// 10 MB at 5 MB/s.
	if took < 1500*time.Millisecond {
		t.Fatalf("moved in %v: faster than the 5 MB/s throttle allows", took)
	}
	t.Logf("moved in %v", took)
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), topic+"-") && (e.Name() != topic+"-0" || filepath.Clean(d) != filepath.Clean(target)) {
				t.Fatalf("%s holds %s after the move", d, e.Name())
			}
		}
	}

	rd := newClient(t, b.Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	mu.Lock()
	defer mu.Unlock()
	missing := len(acked)
	var last int64 = -1
	for missing > 0 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acknowledged records not read back", missing, len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want, ok := acked[string(r.Key)]; !ok || want != string(r.Value) || r.Offset != last+1 {
				t.Fatalf("offset %d (after %d): key %q, value of %d bytes, not as produced", r.Offset, last, r.Key, len(r.Value))
			}
			last = r.Offset
			missing--
		})
	}
	t.Logf("%d acknowledged records read back, offsets 0-%d", len(acked), last)
}

// TestRecoverLogDirMoves: the layouts a crash can leave mid-move restart
// with one copy of each partition.
func TestRecoverLogDirMoves(t *testing.T) {
	a, bdir := t.TempDir(), t.TempDir()
	mk := func(dir, name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "which"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Copy unfinished: the future goes, the current stays.
	mk(a, "t-0", "current")
	mk(bdir, "t-0.aaaa-future", "partial")
	// Copy finished, swap cut after the old dir was renamed: the future
	// becomes the partition, the old one goes.
	mk(a, "t-1.bbbb-delete", "old")
	mk(bdir, "t-1.bbbb-future", "complete")
	// Swap done, deletion cut short.
	mk(a, "t-2.cccc-delete", "old")
	mk(bdir, "t-2", "moved")
	// An old dir renamed whose future was lost: it stays the partition.
	mk(a, "t-3.dddd-delete", "only")
	if err := recoverLogDirMoves([]string{a, bdir}); err != nil {
		t.Fatal(err)
	}
	found, err := scanLogDirs([]string{a, bdir})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{0: filepath.Join(a, "t-0"), 1: filepath.Join(bdir, "t-1"), 2: filepath.Join(bdir, "t-2"), 3: filepath.Join(a, "t-3")}
	contents := map[int32]string{0: "current", 1: "complete", 2: "moved", 3: "only"}
	for p, dir := range want {
		if found["t"][p] != dir {
			t.Fatalf("partition %d in %q, want %q (found %v)", p, found["t"][p], dir, found)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "which")); err != nil || string(data) != contents[p] {
			t.Fatalf("partition %d holds %q (%v), want %q", p, data, err, contents[p])
		}
	}
	for _, d := range []string{a, bdir} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), futureDirSuffix) || strings.HasSuffix(e.Name(), deleteDirSuffix) {
				t.Fatalf("%s left in %s", e.Name(), d)
			}
		}
	}
	if n := len(found["t"]); n != 4 {
		t.Fatalf("%d partitions found, want 4", n)
	}
}
