package group

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testClock is a settable Config.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// memberCommit syncs m (its own leader) and commits offset for t-p.
func (m *testMember) commit(topic string, p int32, offset int64) int16 {
	m.t.Helper()
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation = m.group, m.id, m.generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = m.id, []byte{0}
	sreq.GroupAssignment = append(sreq.GroupAssignment, a)
	if resp := m.c.SyncGroup(context.Background(), sreq); resp.ErrorCode != 0 {
		m.t.Fatalf("SyncGroup: error %d", resp.ErrorCode)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation, req.MemberID = m.group, m.generation, m.id
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return m.c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func (m *testMember) leave() {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = m.group, m.id
	if resp := m.c.LeaveGroup(context.Background(), req); resp.ErrorCode != 0 {
		m.t.Fatalf("LeaveGroup: error %d", resp.ErrorCode)
	}
}

// tombstones counts the null-valued offset records of group in log.
func tombstones(t *testing.T, log *memLog, group string) int {
	t.Helper()
	n := 0
	_ = log.Replay(func(r Record) error {
		d, err := decodeRecord(r)
		if err == nil && d.isOffset && d.group == group && d.value == nil {
			n++
		}
		return nil
	})
	return n
}

// TestOffsetExpiry: Kafka >= 2.1's offsets.retention.minutes. An empty
// consumer group's offsets expire a retention after it became empty (not
// after the commit); a standalone consumer's each a retention after its
// commit; a group with members keeps its offsets however old. Expired
// offsets get tombstones in the log, leave OffsetFetch and the registry,
// and stay gone after a reload.
func TestOffsetExpiry(t *testing.T) {
	clk := &testClock{t: time.Unix(1_700_000_000, 0)}
	retention := 7 * 24 * time.Hour
	reg := newMemRegistry()
	reg.now = clk.now
	log := &memLog{}
	c := newTestCoordinator(t, Config{Now: clk.now, OffsetsRetention: retention}, WithRegistry(reg))
	loaded(t, c, log)

	// A consumer group commits, then stays with members for 3 days, then
	// its last member leaves.
	m := &testMember{t: t, c: c, group: "consumers"}
	if r := m.await(m.joinAsync(10*time.Minute, time.Minute)); r.ErrorCode != 0 {
		t.Fatalf("join: error %d", r.ErrorCode)
	}
	if code := m.commit("t", 0, 42); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	// A group whose member stays, committing nothing for a month.
	stay := &testMember{t: t, c: c, group: "busy"}
	stay.await(stay.joinAsync(10*time.Minute, time.Minute))
	if code := stay.commit("t", 0, 7); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	// A standalone consumer commits partition 0 now, partition 1 later.
	if code := simpleCommit(t, c, "standalone", "t", 0, 100, ""); code != 0 {
		t.Fatalf("simple commit: error %d", code)
	}
	clk.advance(3 * 24 * time.Hour)
	if code := simpleCommit(t, c, "standalone", "t", 1, 200, ""); code != 0 {
		t.Fatalf("simple commit: error %d", code)
	}
	m.leave()
	waitState(t, c, "consumers", stateEmpty)

	// 7 days and a minute after the first commits: the standalone
	// consumer's partition 0 goes; the consumer group emptied 3 days ago.
	clk.advance(retention - 3*24*time.Hour + time.Minute)
	if n := c.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d offsets, want 1 (the standalone consumer's first)", n)
	}
	if off, _ := fetchOffset(t, c, "standalone", "t", 0); off != -1 {
		t.Fatalf("expired offset still fetched: %d", off)
	}
	if off, _ := fetchOffset(t, c, "standalone", "t", 1); off != 200 {
		t.Fatalf("younger standalone offset: %d", off)
	}
	if off, _ := fetchOffset(t, c, "consumers", "t", 0); off != 42 {
		t.Fatalf("the group emptied 4 days ago lost its offset: %d", off)
	}
	if _, ok := reg.offsets["standalone"][TopicPartition{"t", 0}]; ok {
		t.Fatal("expired offset still in the registry")
	}

	// 3 days later both remaining expire; the busy group keeps its own.
	clk.advance(3 * 24 * time.Hour)
	if n := c.ExpireOffsets(); n != 2 {
		t.Fatalf("expired %d offsets, want 2", n)
	}
	clk.advance(30 * 24 * time.Hour)
	if n := c.ExpireOffsets(); n != 0 {
		t.Fatalf("expired %d offsets of a group with members", n)
	}
	for _, g := range []string{"consumers", "standalone"} {
		if off, _ := fetchOffset(t, c, g, "t", 0); off != -1 {
			t.Fatalf("%s: expired offset still fetched: %d", g, off)
		}
		if _, ok := reg.offsets[g]; ok {
			t.Fatalf("%s: registry still holds %v", g, reg.offsets[g])
		}
	}
	if off, _ := fetchOffset(t, c, "busy", "t", 0); off != 7 {
		t.Fatalf("group with members: offset %d", off)
	}
	if got := tombstones(t, log, "consumers") + tombstones(t, log, "standalone"); got != 3 {
		t.Fatalf("%d tombstones in the log, want 3", got)
	}
	if got := listGroups(c); got["consumers"] || got["standalone"] || !got["busy"] {
		t.Fatalf("groups after expiry: %v", got)
	}

	// A coordinator loading the log afterwards has them gone too.
	c.Unload(0)
	c2 := newTestCoordinator(t, Config{Now: clk.now, OffsetsRetention: retention}, WithRegistry(reg))
	loaded(t, c2, log)
	if off, _ := fetchOffset(t, c2, "consumers", "t", 0); off != -1 {
		t.Fatalf("reloaded: expired offset %d", off)
	}
	if off, _ := fetchOffset(t, c2, "busy", "t", 0); off != 7 {
		t.Fatalf("reloaded: offset %d", off)
	}
	// Read back, the busy group counts as committed at the load: nothing
	// expires until a retention has passed since.
	if n := c2.ExpireOffsets(); n != 0 {
		t.Fatalf("expired %d offsets right after a load", n)
	}
	clk.advance(retention)
	if n := c2.ExpireOffsets(); n != 1 {
		t.Fatalf("expired %d offsets a retention after the load, want 1", n)
	}
}

func listGroups(c *Coordinator) map[string]bool {
	out := map[string]bool{}
	for _, g := range c.allGroups() {
		out[g.id] = true
	}
	return out
}
