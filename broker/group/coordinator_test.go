package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory offsets partition.
type memLog struct {
	mu      sync.Mutex
	records []Record
	closed  bool
}

func (l *memLog) Append(rs []Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("%w: closed", ErrNotLoaded)
	}
	l.records = append(l.records, rs...)
	return nil
}

func (l *memLog) Replay(fn func(Record) error) error {
	l.mu.Lock()
	rs := append([]Record(nil), l.records...)
	l.mu.Unlock()
	for _, r := range rs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// memRegistry is an in-memory Registry.
type memRegistry struct {
	mu      sync.Mutex
	offsets map[string]map[TopicPartition]RegistryOffset
	now     func() time.Time
}

func newMemRegistry() *memRegistry {
	return &memRegistry{offsets: map[string]map[TopicPartition]RegistryOffset{}, now: time.Now}
}

func (r *memRegistry) Store(_ context.Context, group string, offs []RegistryOffset) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.offsets[group] == nil {
		r.offsets[group] = map[TopicPartition]RegistryOffset{}
	}
	for _, o := range offs {
		o.Modified = r.now()
		r.offsets[group][o.TopicPartition] = o
	}
	return nil
}

func (r *memRegistry) Remove(_ context.Context, group string, tps []TopicPartition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tps == nil {
		delete(r.offsets, group)
	}
	for _, tp := range tps {
		delete(r.offsets[group], tp)
	}
	return nil
}

func (r *memRegistry) Load(_ context.Context, owns func(string) bool) (map[string][]RegistryOffset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]RegistryOffset{}
	for g, offs := range r.offsets {
		if !owns(g) {
			continue
		}
		for _, o := range offs {
			out[g] = append(out[g], o)
		}
	}
	return out, nil
}

func newTestCoordinator(t *testing.T, cfg Config, opts ...Option) *Coordinator {
	t.Helper()
	if cfg.OffsetsTopicPartitions == 0 {
		cfg.OffsetsTopicPartitions = 1
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1
	}
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = 10 * time.Millisecond
	}
	c, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// loaded loads log as partition 0 and waits for it.
func loaded(t *testing.T, c *Coordinator, log Log) {
	t.Helper()
	c.Load(0, log)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Loaded(0) {
		if time.Now().After(deadline) {
			t.Fatal("partition did not load")
		}
		time.Sleep(time.Millisecond)
	}
}

func fetchOffset(t *testing.T, c *Coordinator, group, topic string, p int32) (int64, string) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := c.OffsetFetch(context.Background(), req)
	if resp.ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s: error %d", group, resp.ErrorCode)
	}
	o := resp.Topics[0].Partitions[0]
	return o.Offset, *o.Metadata
}

func simpleCommit(t *testing.T, c *Coordinator, group, topic string, p int32, offset int64, meta string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.Metadata = p, offset, kmsg.StringPtr(meta)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

// TestRecordsRoundTrip: offset records encode to Kafka's key and value
// schemas and decode back; tombstones and group metadata keys are told
// apart; garbage is reported as corrupt.
func TestRecordsRoundTrip(t *testing.T) {
	c := committed{Offset: 42, LeaderEpoch: 7, Metadata: "meta", CommitTime: 1_700_000_000_000}
	r := offsetRecord("g", "t", 3, c)
	d, err := decodeRecord(r)
	if err != nil || !d.isOffset || d.group != "g" || d.topic != "t" || d.partition != 3 || d.value == nil || *d.value != c {
		t.Fatalf("decoded %+v (%v)", d, err)
	}
	// Kafka's layout: int16 version 1, then the strings and the partition.
	if want := []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 3}; string(r.Key) != string(want) {
		t.Fatalf("key bytes %v, want %v", r.Key, want)
	}
	if r.Value[0] != 0 || r.Value[1] != 3 {
		t.Fatalf("value version %v, want 3", r.Value[:2])
	}
	d, err = decodeRecord(offsetTombstone("g", "t", 3))
	if err != nil || !d.isOffset || d.value != nil {
		t.Fatalf("tombstone decoded %+v (%v)", d, err)
	}
	gk := kmsg.NewGroupMetadataKey()
	gk.Version, gk.Group = 2, "g"
	if d, err := decodeRecord(Record{Key: gk.AppendTo(nil)}); err != nil || d.isOffset {
		t.Fatalf("group metadata key decoded %+v (%v)", d, err)
	}
	for _, bad := range []Record{{Key: []byte{0}}, {Key: []byte{0, 9, 1}}, {Key: r.Key, Value: []byte{0, 3, 1}}} {
		if _, err := decodeRecord(bad); !errors.Is(err, ErrCorruptRecord) {
			t.Fatalf("decoding %v: %v, want ErrCorruptRecord", bad, err)
		}
	}
}

// TestLoadReplaysLogThenRegistry: a load applies commits and tombstones in
// log order, skips group metadata and corrupt records, and takes a
// registry offset only when it is newer than the log's commit.
func TestLoadReplaysLogThenRegistry(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	log := &memLog{}
	_ = log.Append([]Record{
		offsetRecord("g1", "t", 0, committed{Offset: 5, Metadata: "a", CommitTime: now.UnixMilli()}),
		offsetRecord("g1", "t", 0, committed{Offset: 9, Metadata: "b", CommitTime: now.UnixMilli()}),
		offsetRecord("g1", "t", 1, committed{Offset: 3, CommitTime: now.UnixMilli()}),
		offsetTombstone("g1", "t", 1),
		{Key: []byte{0, 2, 0, 2, 'g', '1'}, Value: []byte("opaque group metadata")},
		{Key: []byte{7}},
		offsetRecord("g2", "t", 0, committed{Offset: 100, Metadata: "kept", CommitTime: now.UnixMilli()}),
		offsetRecord("g3", "t", 0, committed{Offset: 1, CommitTime: now.UnixMilli()}),
	})
	reg := newMemRegistry()
	reg.offsets["g2"] = map[TopicPartition]RegistryOffset{ // older than the log: ignored
		{"t", 0}: {TopicPartition: TopicPartition{"t", 0}, Offset: 50, Modified: now.Add(-time.Minute)}}
	reg.offsets["g3"] = map[TopicPartition]RegistryOffset{ // newer: wins
		{"t", 0}: {TopicPartition: TopicPartition{"t", 0}, Offset: 77, Modified: now.Add(time.Minute)}}
	reg.offsets["zk-only"] = map[TopicPartition]RegistryOffset{ // a ZooKeeper-group consumer's
		{"t", 2}: {TopicPartition: TopicPartition{"t", 2}, Offset: 12, Modified: now}}
	c := newTestCoordinator(t, Config{}, WithRegistry(reg))
	loaded(t, c, log)
	for _, tc := range []struct {
		group string
		p     int32
		off   int64
		meta  string
	}{
		{"g1", 0, 9, "b"}, {"g1", 1, -1, ""}, {"g2", 0, 100, "kept"}, {"g3", 0, 77, ""}, {"zk-only", 2, 12, ""},
	} {
		if off, meta := fetchOffset(t, c, tc.group, "t", tc.p); off != tc.off || meta != tc.meta {
			t.Errorf("%s t-%d: offset %d %q, want %d %q", tc.group, tc.p, off, meta, tc.off, tc.meta)
		}
	}
	// Commits go to the log and, written through, to the registry.
	if code := simpleCommit(t, c, "g1", "t", 0, 10, "c"); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	if o := reg.offsets["g1"][TopicPartition{"t", 0}]; o.Offset != 10 {
		t.Fatalf("registry holds %+v after the commit", o)
	}
	c.Unload(0)
	c2 := newTestCoordinator(t, Config{})
	loaded(t, c2, log)
	if off, meta := fetchOffset(t, c2, "g1", "t", 0); off != 10 || meta != "c" {
		t.Fatalf("reloaded from the log: %d %q", off, meta)
	}
}

// member is a test member speaking to a coordinator.
type testMember struct {
	t          *testing.T
	c          *Coordinator
	group, id  string
	generation int32
}

func (m *testMember) joinAsync(session, rebalance time.Duration) chan *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(3) // no MEMBER_ID_REQUIRED round trip
	req.Group, req.MemberID = m.group, m.id
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(session.Milliseconds()), int32(rebalance.Milliseconds())
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- m.c.JoinGroup(context.Background(), req, "client", "/host") }()
	return ch
}

func (m *testMember) await(ch chan *kmsg.JoinGroupResponse) *kmsg.JoinGroupResponse {
	m.t.Helper()
	select {
	case resp := <-ch:
		if resp.ErrorCode == 0 {
			m.id, m.generation = resp.MemberID, resp.Generation
		}
		return resp
	case <-time.After(20 * time.Second):
		m.t.Fatal("join not answered")
		return nil
	}
}

func (m *testMember) heartbeat() int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.generation
	return m.c.Heartbeat(context.Background(), req).ErrorCode
}

// TestRebalanceDropsSilentMembers: a member that stops heartbeating is
// removed when its session times out and the others are told to rejoin;
// a member that heartbeats but does not rejoin a rebalance is removed when
// the rebalance timeout passes.
func TestRebalanceDropsSilentMembers(t *testing.T) {
	c := newTestCoordinator(t, Config{})
	loaded(t, c, &memLog{})
	a := &testMember{t: t, c: c, group: "g"}
	b := &testMember{t: t, c: c, group: "g"}
	a.await(a.joinAsync(time.Minute, time.Minute))
	if a.generation != 1 {
		t.Fatalf("first generation %d", a.generation)
	}
	// b first, so that a's rejoin completes a rebalance b is part of.
	chB := b.joinAsync(300*time.Millisecond, 300*time.Millisecond)
	waitState(t, c, "g", statePreparing)
	chA := a.joinAsync(time.Minute, time.Minute)
	a.await(chA)
	b.await(chB)
	if a.generation != 2 || b.generation != 2 {
		t.Fatalf("generations %d %d, want 2", a.generation, b.generation)
	}
	// b goes silent: its session (300 ms) expires, a must rejoin.
	deadline := time.Now().Add(20 * time.Second)
	for a.heartbeat() != kerr.RebalanceInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("no rebalance after b's session expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := b.heartbeat(); got != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member's heartbeat: error %d", got)
	}
	resp := a.await(a.joinAsync(time.Minute, 300*time.Millisecond))
	if resp.ErrorCode != 0 || a.generation != 3 || len(resp.Members) != 1 {
		t.Fatalf("rejoin alone: %+v", resp)
	}

	// b joins again; a heartbeats through the rebalance without joining
	// and is dropped after the rebalance timeout (300 ms now).
	b.id = ""
	chB = b.joinAsync(time.Minute, 300*time.Millisecond)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				a.heartbeat()
			}
		}
	}()
	resp = b.await(chB)
	close(stop)
	if resp.ErrorCode != 0 || len(resp.Members) != 1 || resp.Members[0].MemberID != b.id || resp.LeaderID != b.id {
		t.Fatalf("after the rebalance timeout: %+v", resp)
	}
	if got := a.heartbeat(); got != kerr.UnknownMemberID.Code {
		t.Fatalf("dropped member's heartbeat: error %d", got)
	}
}

// TestUnloadAnswersWaiters: a join waiting for a rebalance when the
// partition moves away is answered NOT_COORDINATOR, and later requests
// too.
func TestUnloadAnswersWaiters(t *testing.T) {
	c := newTestCoordinator(t, Config{InitialRebalanceDelay: time.Hour})
	loaded(t, c, &memLog{})
	a := &testMember{t: t, c: c, group: "g"}
	ch := a.joinAsync(time.Minute, time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if g, _, _ := c.lookup("g", false); g != nil {
			g.mu.Lock()
			joined := len(g.members) == 1
			g.mu.Unlock()
			if joined {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("join did not register")
		}
		time.Sleep(time.Millisecond)
	}
	c.Unload(0)
	if resp := a.await(ch); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("waiting join after unload: error %d", resp.ErrorCode)
	}
	if got := a.heartbeat(); got != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat after unload: error %d", got)
	}
	if code := simpleCommit(t, c, "g", "t", 0, 1, ""); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit after unload: error %d", code)
	}
}

// TestInitialDelayGathersMembers: the first rebalance of an empty group
// waits group.initial.rebalance.delay.ms, so members arriving together
// share the first generation.
func TestInitialDelayGathersMembers(t *testing.T) {
	c := newTestCoordinator(t, Config{InitialRebalanceDelay: 300 * time.Millisecond})
	loaded(t, c, &memLog{})
	var ms []*testMember
	var chs []chan *kmsg.JoinGroupResponse
	for range 3 {
		m := &testMember{t: t, c: c, group: "g"}
		ms = append(ms, m)
		chs = append(chs, m.joinAsync(time.Minute, time.Minute))
	}
	for i, m := range ms {
		resp := m.await(chs[i])
		if resp.ErrorCode != 0 || resp.Generation != 1 {
			t.Fatalf("member %d: %+v", i, resp)
		}
		if resp.LeaderID == resp.MemberID && len(resp.Members) != 3 {
			t.Fatalf("leader saw %d members", len(resp.Members))
		}
	}
}

// waitState waits until the group is in state st.
func waitState(t *testing.T, c *Coordinator, id string, st state) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if g, _, _ := c.lookup(id, false); g != nil {
			g.mu.Lock()
			now := g.state
			g.mu.Unlock()
			if now == st {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s never reached %s", id, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestResentJoinGetsCurrentGeneration: a join resent while the group waits
// for the leader's assignment (its first response was lost) is answered
// at once with the current generation, the leader's with the members.
func TestResentJoinGetsCurrentGeneration(t *testing.T) {
	c := newTestCoordinator(t, Config{})
	loaded(t, c, &memLog{})
	a := &testMember{t: t, c: c, group: "g"}
	first := a.await(a.joinAsync(time.Minute, time.Minute))
	again := a.await(a.joinAsync(time.Minute, time.Minute))
	if again.ErrorCode != 0 || again.Generation != first.Generation || again.LeaderID != a.id || len(again.Members) != 1 {
		t.Fatalf("resent join: %+v, first %+v", again, first)
	}
}

// gatedLog is a memLog whose Replay waits for open to be closed.
type gatedLog struct {
	memLog
	entered, open chan struct{}
}

func (l *gatedLog) Replay(fn func(Record) error) error {
	close(l.entered)
	<-l.open
	return l.memLog.Replay(fn)
}

// TestAwaitLoaded: AwaitLoaded returns only once the partition is served
// and read back (what FindCoordinator waits for before naming the broker),
// and waits again after an unload.
func TestAwaitLoaded(t *testing.T) {
	c := newTestCoordinator(t, Config{})
	short := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		return c.AwaitLoaded(ctx, 0)
	}
	if err := short(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitLoaded of a partition not served: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.AwaitLoaded(ctx, 0) }()
	log := &gatedLog{entered: make(chan struct{}), open: make(chan struct{})}
	c.Load(0, log)
	<-log.entered
	if code := c.CoordinatorError("g"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("while loading: code %d", code)
	}
	select {
	case err := <-done:
		t.Fatalf("AwaitLoaded returned %v while the partition was loading", err)
	default:
	}
	close(log.open)
	if err := <-done; err != nil {
		t.Fatalf("AwaitLoaded: %v", err)
	}
	if code := c.CoordinatorError("g"); code != 0 {
		t.Fatalf("after AwaitLoaded: code %d", code)
	}
	if err := c.AwaitLoaded(ctx, 0); err != nil {
		t.Fatalf("AwaitLoaded of a loaded partition: %v", err)
	}
	c.Unload(0)
	if err := short(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitLoaded after unload: %v", err)
	}
}
