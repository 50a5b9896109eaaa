package clustertest

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/brokertest"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// loadLog keeps the coordinator's "loaded offsets partition" lines.
type loadLog struct {
	slog.Handler
	mu    *sync.Mutex
	loads *[]string
}

// Enabled lets info records through to Handle, which keeps the load lines.
func (h loadLog) Enabled(context.Context, slog.Level) bool { return true }

func (h loadLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "loaded offsets partition" {
		var line strings.Builder
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&line, "%s=%v ", a.Key, a.Value); return true })
		h.mu.Lock()
		*h.loads = append(*h.loads, line.String())
		h.mu.Unlock()
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h loadLog) WithAttrs(as []slog.Attr) slog.Handler {
	return loadLog{h.Handler.WithAttrs(as), h.mu, h.loads}
}

func (h loadLog) WithGroup(n string) slog.Handler {
	return loadLog{h.Handler.WithGroup(n), h.mu, h.loads}
}

// offsetsCluster is two in-process brokers on ZooKeeper whose offsets
// topic (2 partitions, 2 replicas, small segments) is cleaned quickly and
// whose offsets expire after retention.
func offsetsCluster(t *testing.T, retention time.Duration) (*brokertest.Cluster, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var loads []string
	h := loadLog{testenv.Logger(t, slog.LevelWarn).Handler(), &mu, &loads}
	c := brokertest.NewCluster(t, 2, brokertest.ZooKeeper(), brokertest.Logger(slog.New(h)), brokertest.Config(func(cfg *config.Config) {
		cfg.Groups.OffsetsTopicPartitions = 2
		cfg.Groups.OffsetsReplication = 2
		cfg.Groups.OffsetsTopicSegmentBytes = 16 << 10
		cfg.Groups.OffsetsRetention = retention
		cfg.Groups.OffsetsRetentionCheck = 100 * time.Millisecond
		cfg.Groups.InitialRebalanceDelay = -1
		cfg.Cleaner.Backoff = 50 * time.Millisecond
		cfg.Cleaner.DeleteRetention = -1 // tombstones go at the next cleaning
		cfg.Replication.LagTimeMax = 2 * time.Second
	}))
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), loads...) }
}

// partitionBytes is the size of a partition directory's segment files.
func partitionBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			if err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// TestOffsetsTopicCompacted: __consumer_offsets is created compacted. A
// group committing many times (100,000 with TRIBUTARY_FULL=1) keeps its
// offsets partition bounded once cleaned, and a coordinator move reads
// back that partition fast (the figure is logged).
func TestOffsetsTopicCompacted(t *testing.T) {
	t.Parallel() // its own cluster and chroot; no bound on the figures it logs
	commits := 3000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		commits = 100_000
	}
	c, loads := offsetsCluster(t, 7*24*time.Hour)
	ctx := testenv.Context(t, 10*time.Minute)
	addrs := c.Addrs()
	const grp, topic = "committer", "consumed"
	c.CreateTopic(t, topic, 1)
	adm := kadm.NewClient(newClient(t, addrs))
	began := time.Now()
	for i := 1; i <= commits; i++ {
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: int64(i), LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, grp, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	t.Logf("%d commits in %v", commits, time.Since(began).Round(time.Millisecond))

	cfgs, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := cfgs.On("__consumer_offsets", nil); err != nil || !hasConfig(v.Configs, "cleanup.policy", "compact") {
		t.Fatalf("offsets topic configs %+v (%v), want cleanup.policy=compact", v.Configs, err)
	}

	coordinator := coordinatorIn(t, ctx, addrs, grp)
	part := offsetsPartitionOf(grp)
	dir := filepath.Join(c.Dir(coordinator), fmt.Sprintf("__consumer_offsets-%d", part))
	written := int64(commits) * 100 // each commit's batch is more than 100 bytes
	testenv.WaitFor(t, waitTimeout, "the offsets partition cleaned", func() (bool, string) {
		n := partitionBytes(t, dir)
		return n < 3*16<<10, fmt.Sprintf("%d bytes (%d written)", n, written)
	})
	t.Logf("offsets partition: %d bytes on disk after %d commits", partitionBytes(t, dir), commits)

	// The coordinator moves: its broker stops, the other loads the
	// cleaned partition.
	before := len(loads())
	c.Stop(t, coordinator)
	live := c.Addrs()
	var got int64
	testenv.WaitFor(t, waitTimeout, "the offset from the new coordinator", func() (bool, string) {
		offs, err := kadm.NewClient(newClient(t, live)).FetchOffsets(ctx, grp)
		if err != nil {
			return false, err.Error()
		}
		o, _ := offs.Lookup(topic, 0)
		got = o.At
		return got == int64(commits), fmt.Sprint("offset ", got)
	})
	var figure string
	for _, l := range loads()[before:] {
		if strings.Contains(l, fmt.Sprintf("partition=%d ", part)) {
			figure = l
		}
	}
	if figure == "" {
		t.Fatalf("no load of offsets partition %d logged after the move: %v", part, loads()[before:])
	}
	t.Logf("coordinator move: %s", figure)
}

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// coordinatorIn returns the group's coordinator.
func coordinatorIn(t *testing.T, ctx context.Context, addrs []string, grp string) int32 {
	t.Helper()
	return liveCoordinator(t, ctx, func() []string { return addrs }, func(int32) bool { return true }, grp)
}

// offsetsPartitionOf is the group's partition of the 2-partition offsets
// topic, computed as Kafka does (String.hashCode, sign masked, modulo).
func offsetsPartitionOf(grp string) int32 {
	var h int32
	for _, r := range grp {
		h = 31*h + r
	}
	return (h & 0x7fffffff) % 2
}

// TestOffsetsExpireAndAreCleaned: an empty consumer group's offsets expire
// offsets.retention after the group became empty, a standalone consumer's
// after its commit: gone from OffsetFetch, from ZooKeeper's
// /consumers/<group>/offsets, and, once cleaned, from the offsets topic.
// A group that keeps a member keeps its offsets.
func TestOffsetsExpireAndAreCleaned(t *testing.T) {
	const retention = 3 * time.Second
	c, _ := offsetsCluster(t, retention)
	ctx := testenv.Context(t, 5*time.Minute)
	addrs := c.Addrs()
	const topic = "consumed"
	c.CreateTopic(t, topic, 1)
	prod := newClient(t, addrs)
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer group reads and commits, then leaves: the group is empty.
	consume := func(grp string) *kgo.Client {
		cl := newClient(t, addrs, kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		n := 0
		for n < 10 {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: poll: %v", grp, err)
			}
			n += fs.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s: commit: %v", grp, err)
		}
		return cl
	}
	consume("leaving").Close()
	stays := consume("staying")
	adm := kadm.NewClient(newClient(t, addrs))
	var simple kadm.Offsets
	simple.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "standalone", simple); err != nil || resp.Error() != nil {
		t.Fatalf("standalone commit: %v %v", err, resp.Error())
	}
	for _, g := range []string{"leaving", "staying", "standalone"} {
		if got := registryOffsets(t, ctx, c.ZooKeeper(), g, topic, 1); len(got) != 1 {
			t.Fatalf("%s: registry holds %v before expiry", g, got)
		}
	}

	for _, g := range []string{"leaving", "standalone"} {
		testenv.WaitFor(t, waitTimeout, g+"'s offsets expired", func() (bool, string) {
			offs, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				return false, err.Error()
			}
			o, ok := offs.Lookup(topic, 0)
			return !ok || o.At < 0, fmt.Sprint("offset ", o.At)
		})
		testenv.WaitFor(t, waitTimeout, g+"'s offsets gone from ZooKeeper", func() (bool, string) {
			got := registryOffsets(t, ctx, c.ZooKeeper(), g, topic, 1)
			return len(got) == 0, fmt.Sprint(got)
		})
	}
	offs, err := adm.FetchOffsets(ctx, "staying")
	if o, _ := offs.Lookup(topic, 0); err != nil || o.At != 10 {
		t.Fatalf("the group with a member lost its offset: %+v %v", o, err)
	}
	stays.Close()

	// Commits of another group roll segments, so the cleaner takes the
	// tombstones (delete.retention.ms=0) and the expired records with them.
	for i := range 400 {
		var fill kadm.Offsets
		fill.Add(kadm.Offset{Topic: topic, Partition: 0, At: int64(i), LeaderEpoch: -1, Metadata: strings.Repeat("m", 200)})
		for _, g := range []string{"leaving", "standalone"} {
			if _, err := adm.CommitOffsets(ctx, fillerOf(g), fill); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, g := range []string{"leaving", "standalone"} {
		part := offsetsPartitionOf(g)
		for _, id := range []int32{1, 2} {
			dir := filepath.Join(c.Dir(id), fmt.Sprintf("__consumer_offsets-%d", part))
			testenv.WaitFor(t, waitTimeout, fmt.Sprintf("%s's records cleaned from broker %d's offsets partition", g, id), func() (bool, string) {
				if cleanerCheckpoint(dir) == 0 {
					return false, "not cleaned yet"
				}
				n := groupRecords(t, dir, g)
				return n == 0, fmt.Sprintf("%d records of %s", n, g)
			})
		}
	}
}

// groupRecords counts the records (tombstones included) of group's
// offsets in a partition directory's segment files, below the cleaner
// checkpoint (the dirty rest may hold any).
func groupRecords(t *testing.T, dir, grp string) int {
	t.Helper()
	n := 0
	for _, k := range readPartitionFiles(t, dir) {
		if k.off >= cleanerCheckpoint(dir) {
			continue
		}
		var key kmsg.OffsetCommitKey
		if err := key.ReadFrom([]byte(k.key)); err == nil && key.Group == grp {
			n++
		}
	}
	return n
}

// fillerOf names a group on the same offsets partition as g.
func fillerOf(g string) string {
	for i := 0; ; i++ {
		if f := fmt.Sprintf("filler-%d-%s", i, g); offsetsPartitionOf(f) == offsetsPartitionOf(g) {
			return f
		}
	}
}

type fileRecord struct {
	off int64
	key string
}

// readPartitionFiles parses a partition directory's .log files as they
// are (a broker may be writing them: a file removed meanwhile is skipped,
// a partial last batch ignored) and returns the records' keys by offset.
func readPartitionFiles(t *testing.T, dir string) []fileRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names) // 20-digit base offsets
	dec := kgo.DefaultDecompressor()
	var out []fileRecord
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for len(b) >= 61 {
			var rb kmsg.RecordBatch
			if rb.ReadFrom(b) != nil || 12+int(rb.Length) > len(b) {
				break
			}
			b = b[12+int(rb.Length):]
			raw, err := dec.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&7))
			if err != nil || rb.Attributes&0x20 != 0 {
				continue
			}
			for range rb.NumRecords {
				n, hdr := binary.Varint(raw)
				if hdr <= 0 || hdr+int(n) > len(raw) {
					break
				}
				var r kmsg.Record
				if r.ReadFrom(raw[:hdr+int(n)]) != nil {
					break
				}
				raw = raw[hdr+int(n):]
				out = append(out, fileRecord{rb.FirstOffset + int64(r.OffsetDelta), string(r.Key)})
			}
		}
	}
	return out
}

// TestOffsetsTopicMigratedToCompact: an offsets topic created by an older
// version (retention.ms=-1, the delete policy) is switched to compact when
// the brokers restart and load it.
func TestOffsetsTopicMigratedToCompact(t *testing.T) {
	c, _ := offsetsCluster(t, 7*24*time.Hour)
	ctx := testenv.Context(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, c.Addrs()))
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	c.CreateTopic(t, "t", 1)
	if resp, err := adm.CommitOffsets(ctx, "g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	// What the previous version wrote.
	if _, err := c.Broker(1).Member().UpdateTopicConfigs(ctx, "__consumer_offsets", func(cfg map[string]string) error {
		clear(cfg)
		cfg["retention.ms"], cfg["segment.bytes"] = "-1", "104857600"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Stop(t, 1)
	c.Stop(t, 2)
	c.Restart(t, 1)
	c.Restart(t, 2)
	testenv.WaitFor(t, waitTimeout, "the offsets topic compacted", func() (bool, string) {
		cfg := c.Broker(1).Member().Metadata().Topics["__consumer_offsets"].Configs
		return cfg["cleanup.policy"] == "compact" && cfg["retention.ms"] == "", fmt.Sprint(cfg)
	})
	o := committedOffsets(t, ctx, c.Addrs(), "g", "t", 1)
	if o[0] != 1 {
		t.Fatalf("offsets after the migration: %v", o)
	}
}
