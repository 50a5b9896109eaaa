package broker

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// groupTestConfig makes group tests quick: a small offsets topic, no
// initial rebalance delay unless a test wants one, and short sessions
// allowed.
func groupTestConfig(c *config.Config) {
	c.Groups.OffsetsTopicPartitions = 4
	c.Groups.InitialRebalanceDelay = -1
	c.Groups.MinSessionTimeout = 500 * time.Millisecond
}

// produceTestRecords writes records 0..n-1 of testRecord to topic and
// returns them by partition, in offset order.
func produceTestRecords(t *testing.T, ctx context.Context, addr, topic string, n, partitions int) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, testRecord(topic, i, partitions))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// pollUntil polls cl until it has seen n records, checking each one's
// content, and returns the record numbers seen, per partition in order.
func pollUntil(t *testing.T, ctx context.Context, cl *kgo.Client, n, partitions int) map[int32][]int {
	t.Helper()
	seen := map[int32][]int{}
	total := 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records: %v", total, n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen[r.Partition] = append(seen[r.Partition], checkRecord(t, r, partitions))
			total++
		})
	}
	return seen
}

// TestGroupCommitRestartResumes: a franz-go group consumer reads half a
// topic and commits; a new consumer of the same group resumes exactly
// after the committed offsets, and kadm reads back those offsets.
func TestGroupCommitRestartResumes(t *testing.T) {
	b := newTestBroker(t, groupTestConfig)
	ctx := testenv.Context(t, 2*time.Minute)
	const parts, n = 3, 300
	if err := b.CreateTopic(ctx, "gr", parts); err != nil {
		t.Fatal(err)
	}
	produceTestRecords(t, ctx, b.Addr(), "gr", n, parts)

	first := newClient(t, b.Addr(), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gr"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxBytes(1))
	// Read (at least) half, then commit exactly the first half of each
	// partition: record i is the (i/3)th of partition i%3.
	pollUntil(t, ctx, first, n/2, parts)
	commit := map[string]map[int32]kgo.EpochOffset{"gr": {}}
	for p := range int32(parts) {
		commit["gr"][p] = kgo.EpochOffset{Epoch: -1, Offset: int64(n / parts / 2)}
	}
	var commitErr error
	first.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						commitErr = fmt.Errorf("commit %s-%d: error %d", rt.Topic, rp.Partition, rp.ErrorCode)
					}
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	first.Close()
	for p := range parts {
		lbl := map[string]string{"group": "g1", "topic": "gr", "partition": fmt.Sprint(p)}
		committed := counterValue(t, b.reg, "tributary_group_committed_offset", lbl)
		lag := counterValue(t, b.reg, "tributary_group_lag", lbl)
		if committed != n/parts/2 || lag != n/parts-n/parts/2 {
			t.Fatalf("metrics of gr-%d: committed %v lag %v", p, committed, lag)
		}
	}
	if got := counterValue(t, b.reg, "tributary_group_members", map[string]string{"group": "g1", "state": "Empty"}); got != 0 {
		t.Fatalf("members of the empty group: %v", got)
	}

	adm := kadm.NewClient(newClient(t, b.Addr()))
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		o, ok := offs.Lookup("gr", p)
		if !ok || o.Err != nil || o.At != int64(n/parts/2) {
			t.Fatalf("fetched offset of gr-%d: %+v (ok %v), want %d", p, o, ok, n/parts/2)
		}
	}

	second := newClient(t, b.Addr(), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("gr"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := pollUntil(t, ctx, second, n/2, parts)
	for p := range int32(parts) {
		var want []int
		for i := n / 2; i < n; i++ {
			if int32(i%parts) == p {
				want = append(want, i)
			}
		}
		got := seen[p]
		sort.Ints(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("partition %d after restart read %v, want %v", p, got, want)
		}
	}
}

// TestGroupOffsetsSurviveRestart: a standalone broker restarted on its
// log dirs serves the offsets committed before, read back from
// __consumer_offsets (its in-process coordinator starts empty).
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	b := newTestBroker(t, groupTestConfig)
	// The context outlasts every bounded step below together: it once
	// expired (a minute, for two 30 s waits, a close and a restart on a
	// loaded machine) and the fetch after the restart failed with it,
	// reported as that wait timing out.
	ctx := testenv.Context(t, 5*time.Minute)
	start := time.Now()
	if err := b.CreateTopic(ctx, "rs", 2); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "rs", Partition: 0, At: 17, LeaderEpoch: -1, Metadata: "m0"})
	offs.Add(kadm.Offset{Topic: "rs", Partition: 1, At: 23, LeaderEpoch: -1})
	var last error
	logChange := func(step string, err error) {
		if err != nil && (last == nil || err.Error() != last.Error()) {
			t.Logf("%s after %v: %v", step, time.Since(start).Round(time.Millisecond), err)
		}
		last = err
	}
	testenv.WaitFor(t, 90*time.Second, "the commit", func() (bool, string) {
		resp, err := adm.CommitOffsets(ctx, "survivor", offs)
		if err == nil {
			err = resp.Error()
		}
		logChange("commit", err)
		return err == nil, ""
	})
	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "rs", Partition: 0, At: 19, LeaderEpoch: -1, Metadata: "m1"})
	if resp, err := adm.CommitOffsets(ctx, "survivor", offs); err != nil || resp.Error() != nil {
		t.Fatalf("second commit: %v %v", err, resp.Error())
	}
	committed := time.Since(start)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	closed := time.Since(start)
	again := startTestBroker(t, b.cfg)
	restarted := time.Since(start)
	t.Logf("committed after %v, closed after %v, restarted after %v", committed.Round(time.Millisecond),
		closed.Round(time.Millisecond), restarted.Round(time.Millisecond))
	adm = kadm.NewClient(newClient(t, again.Addr()))
	testenv.WaitFor(t, 90*time.Second, "the offsets after the restart", func() (bool, string) {
		got, err := adm.FetchOffsets(ctx, "survivor")
		if err == nil {
			err = got.Error()
		}
		logChange("fetch", err)
		if err != nil {
			return false, err.Error()
		}
		o0, _ := got.Lookup("rs", 0)
		o1, _ := got.Lookup("rs", 1)
		if o0.At != 19 || o0.Metadata != "m1" || o1.At != 23 {
			t.Fatalf("after the restart: %+v %+v", o0, o1)
		}
		return true, ""
	})
}

// TestFindCoordinatorOnlyOnceLoaded: FindCoordinator names this broker
// only once it can serve the group, so that the first JoinGroup and
// OffsetFetch after it succeed. On a fresh broker the first lookup creates
// __consumer_offsets; answering as soon as the metadata had leaders (before
// the partition was opened and loaded) got that join NOT_COORDINATOR, and
// librdkafka waits seconds before joining again, longer than the initial
// rebalance delay its group-mates join within.
func TestFindCoordinatorOnlyOnceLoaded(t *testing.T) {
	b := newTestBroker(t, groupTestConfig)
	c := dialRaw(t, b.Addr())
	// One group per offsets partition, the first one creating the topic.
	byPartition := map[int32]string{}
	var groups []string
	for i := 0; len(byPartition) < int(b.groups.Partitions()); i++ {
		g := fmt.Sprintf("loaded-%d", i)
		if p := b.groups.PartitionFor(g); byPartition[p] == "" {
			byPartition[p] = g
			groups = append(groups, g)
		}
	}
	for _, id := range groups {
		findCoordinator(t, c, id)
		g := rawGroup{t: t, c: c, group: id}
		if resp := g.join(5, "", nil, "consumer", 10000); resp.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("JoinGroup of %s (offsets partition %d) right after FindCoordinator: error %d, want MEMBER_ID_REQUIRED",
				id, b.groups.PartitionFor(id), resp.ErrorCode)
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(5)
		req.Group = id
		if resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("OffsetFetch of %s right after FindCoordinator: %+v", id, resp)
		}
	}
}
