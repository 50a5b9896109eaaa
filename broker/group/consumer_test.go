package group

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicA = [16]byte{1}
	topicB = [16]byte{2}
)

func consumerTestTopics() map[string]TopicMeta {
	return map[string]TopicMeta{"a": {ID: topicA, Partitions: 6}, "b": {ID: topicB, Partitions: 2}, "other": {ID: [16]byte{3}, Partitions: 1}}
}

func newConsumerCoordinator(t *testing.T, log Log) *Coordinator {
	t.Helper()
	c := newTestCoordinator(t, Config{ConsumerSessionTimeout: time.Minute, ConsumerHeartbeatInterval: time.Second},
		WithTopics(consumerTestTopics))
	loaded(t, c, log)
	return c
}

// cgClient is one member as a test drives it: it owns what it was
// assigned and reports it back.
type cgClient struct {
	t     *testing.T
	c     *Coordinator
	id    string
	epoch int32
	owned assignment
}

func (m *cgClient) heartbeat(topics []string, regex *string, owned assignment) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.MemberEpoch = "cg", m.id, m.epoch
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames, req.SubscribedTopicRegex = topics, regex
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range owned.topicIDs() {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: owned[id]})
	}
	resp := m.c.ConsumerGroupHeartbeat(context.Background(), req, "client-"+m.id, "/127.0.0.1")
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = assignment{}
			for _, t := range resp.Assignment.Topics {
				for _, p := range t.Partitions {
					m.owned.add(t.TopicID, p)
				}
			}
		}
	}
	return resp
}

func (m *cgClient) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.heartbeat([]string{"a", "b"}, nil, m.owned)
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s heartbeat: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

// TestConsumerGroupReconciliation: partitions move to a new member only
// after their previous owner revoked them, epochs advance, every
// partition ends assigned once, and a new coordinator loading the log
// resumes the group (epochs, members, assignments).
func TestConsumerGroupReconciliation(t *testing.T) {
	log := &memLog{}
	c := newConsumerCoordinator(t, log)
	a := &cgClient{t: t, c: c, id: "A", owned: assignment{}}
	a.beat()
	if a.epoch != 1 || a.owned.count() != 8 {
		t.Fatalf("first member: epoch %d owns %v", a.epoch, a.owned)
	}
	b := &cgClient{t: t, c: c, id: "B", owned: assignment{}}
	b.beat()
	// B is at the new epoch but gets nothing A still owns.
	if b.epoch != 2 || b.owned.count() != 0 {
		t.Fatalf("B before A revoked: epoch %d owns %v", b.epoch, b.owned)
	}
	// A's heartbeat asks it to revoke half (it stays at epoch 1 until it has).
	a.beat()
	if a.epoch != 1 || a.owned.count() != 4 {
		t.Fatalf("A asked to revoke: epoch %d owns %v", a.epoch, a.owned)
	}
	// B still waits: A has not reported the revocation yet.
	b.beat()
	if b.owned.count() != 0 {
		t.Fatalf("B got partitions A has not revoked: %v", b.owned)
	}
	a.beat() // reports the 4 it kept: the others are released
	if a.epoch != 2 {
		t.Fatalf("A after revoking: epoch %d", a.epoch)
	}
	b.beat()
	if b.owned.count() != 4 || len(b.owned.intersect(a.owned)) != 0 {
		t.Fatalf("after reconciliation A owns %v, B owns %v", a.owned, b.owned)
	}

	d := c.ConsumerGroupDescribe(context.Background(), &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}})
	dg := d.Groups[0]
	if dg.ErrorCode != 0 || dg.State != "Stable" || dg.Epoch != 2 || dg.AssignmentEpoch != 2 || len(dg.Members) != 2 || dg.AssignorName != "uniform" {
		t.Fatalf("describe: %+v", dg)
	}
	if n := dg.Members[0].Assignment.TopicPartitions[0].Topic; n != "a" {
		t.Fatalf("described topic name %q", n)
	}

	lg := c.ListGroups(context.Background(), &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "cg" || lg.Groups[0].GroupType != "consumer" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("list consumer groups: %+v", lg.Groups)
	}
	if lg := c.ListGroups(context.Background(), &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"classic"}}); len(lg.Groups) != 0 {
		t.Fatalf("list classic groups: %+v", lg.Groups)
	}
	if dg := c.DescribeGroups(context.Background(), &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"cg"}}).Groups[0]; dg.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("classic describe of a consumer group: %v", kerr.ErrorForCode(dg.ErrorCode))
	}

	// Commits carry the member epoch.
	commit := func(member string, epoch int32, version int16) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(version)
		req.Group, req.MemberID, req.Generation = "cg", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "a"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 42
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		epoch   int32
		version int16
		want    int16
	}{{1, 9, kerr.StaleMemberEpoch.Code}, {3, 9, kerr.FencedMemberEpoch.Code}, {2, 8, kerr.UnsupportedVersion.Code}, {2, 9, 0}} {
		if got := commit("A", tc.epoch, tc.version); got != tc.want {
			t.Errorf("commit at epoch %d v%d: %v, want %v", tc.epoch, tc.version, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}

	// OffsetFetch v9 checks the member it names.
	fetch := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(9)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "cg", kmsg.StringPtr(member), epoch
		req.Groups = append(req.Groups, rg)
		return c.OffsetFetch(context.Background(), req).Groups[0].ErrorCode
	}
	for _, tc := range []struct {
		member string
		epoch  int32
		want   int16
	}{{"A", 2, 0}, {"A", 1, kerr.StaleMemberEpoch.Code}, {"A", 5, kerr.FencedMemberEpoch.Code}, {"nobody", 2, kerr.UnknownMemberID.Code}} {
		if got := fetch(tc.member, tc.epoch); got != tc.want {
			t.Errorf("OffsetFetch v9 as %s at epoch %d: %v, want %v", tc.member, tc.epoch, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}

	// A classic member is refused; a classic group refuses consumer members.
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(9)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "cg", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if got := c.JoinGroup(context.Background(), join, "x", "/h"); got.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join to a consumer group: %v", kerr.ErrorForCode(got.ErrorCode))
	}

	// Failover: a new coordinator over the same log.
	c.Close()
	c2 := newConsumerCoordinator(t, log)
	a.c, b.c = c2, c2
	a.beat()
	b.beat()
	if a.epoch != 2 || b.epoch != 2 || a.owned.count() != 4 || b.owned.count() != 4 {
		t.Fatalf("after failover: A epoch %d %v, B epoch %d %v", a.epoch, a.owned, b.epoch, b.owned)
	}
	d = c2.ConsumerGroupDescribe(context.Background(), &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}})
	if dg := d.Groups[0]; dg.State != "Stable" || dg.Epoch != 2 || len(dg.Members) != 2 {
		t.Fatalf("describe after failover: %+v", dg)
	}
	if off, _ := fetchOffset(t, c2, "cg", "a", 0); off != 42 {
		t.Fatalf("offset after failover: %d", off)
	}

	// B leaves: A gets everything at the next epoch.
	leave := &cgClient{t: t, c: c2, id: "B", epoch: leaveEpoch}
	if r := leave.heartbeat(nil, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != leaveEpoch {
		t.Fatalf("leave: %+v", r)
	}
	a.beat()
	if a.epoch != 3 || a.owned.count() != 8 {
		t.Fatalf("after B left: A epoch %d owns %v", a.epoch, a.owned)
	}
}

// TestConsumerGroupErrors: Kafka's answers to bad heartbeats.
func TestConsumerGroupErrors(t *testing.T) {
	c := newConsumerCoordinator(t, &memLog{})
	a := &cgClient{t: t, c: c, id: "A", owned: assignment{}}
	a.beat()
	check := func(name string, resp *kmsg.ConsumerGroupHeartbeatResponse, want int16) {
		t.Helper()
		if resp.ErrorCode != want {
			t.Errorf("%s: %v, want %v", name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(want))
		}
	}
	ghost := &cgClient{t: t, c: c, id: "ghost", epoch: 3}
	check("unknown member", ghost.heartbeat(nil, nil, nil), kerr.UnknownMemberID.Code)
	ahead := &cgClient{t: t, c: c, id: "A", epoch: 7}
	check("epoch ahead", ahead.heartbeat(nil, nil, nil), kerr.FencedMemberEpoch.Code)
	bad := "(["
	fresh := &cgClient{t: t, c: c, id: "C"}
	check("bad regex", fresh.heartbeat(nil, &bad, nil), kerr.InvalidRegularExpression.Code)
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.SubscribedTopicNames = "cg", "D", []string{"a"}
	req.ServerAssignor = kmsg.StringPtr("nope")
	req.RebalanceTimeoutMillis = 1000
	check("unknown assignor", c.ConsumerGroupHeartbeat(context.Background(), req, "", ""), kerr.UnsupportedAssignor.Code)
	req.ServerAssignor, req.RebalanceTimeoutMillis = nil, -1
	check("join without rebalance timeout", c.ConsumerGroupHeartbeat(context.Background(), req, "", ""), kerr.InvalidRequest.Code)

	// A classic group with members refuses consumer members.
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "classic", 10000, 10000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := c.JoinGroup(ctx, join, "x", "/h"); got == nil || got.ErrorCode != 0 {
		t.Fatalf("classic join: %+v", got)
	}
	req.Group, req.RebalanceTimeoutMillis = "classic", 1000
	check("consumer member in a classic group", c.ConsumerGroupHeartbeat(context.Background(), req, "", ""), kerr.GroupIDNotFound.Code)
}

// TestConsumerGroupStaticMember: a static member that leaves with epoch
// -2 keeps its partitions, its restart (a new member id) takes them over
// at the same epoch without a rebalance, and a second process with the
// same instance id is refused while the first is in the group.
func TestConsumerGroupStaticMember(t *testing.T) {
	c := newConsumerCoordinator(t, &memLog{})
	beat := func(id string, epoch int32, owned assignment) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = "cg", id, epoch, kmsg.StringPtr("i1")
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 1000, []string{"a"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if owned != nil {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: topicA, Partitions: owned[topicA]})
		}
		return c.ConsumerGroupHeartbeat(context.Background(), req, "", "")
	}
	r := beat("m1", 0, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(r.Assignment.Topics[0].Partitions) != 6 {
		t.Fatalf("static join: %+v", r)
	}
	if r := beat("m2", 0, nil); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("duplicate instance: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := beat("m1", staticLeaveEpoch, nil); r.ErrorCode != 0 || r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", r)
	}
	r = beat("m2", 0, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics[0].Partitions) != 6 {
		t.Fatalf("static rejoin: %+v", r)
	}
	d := c.ConsumerGroupDescribe(context.Background(), &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}})
	if dg := d.Groups[0]; dg.Epoch != 1 || len(dg.Members) != 1 || dg.Members[0].MemberID != "m2" {
		t.Fatalf("after static rejoin: %+v", dg)
	}
}

// TestConsumerGroupSessionTimeout: a member that stops heartbeating is
// removed after group.consumer.session.timeout.ms and its partitions go
// to the others.
func TestConsumerGroupSessionTimeout(t *testing.T) {
	c := newTestCoordinator(t, Config{ConsumerSessionTimeout: 300 * time.Millisecond, ConsumerHeartbeatInterval: 50 * time.Millisecond},
		WithTopics(consumerTestTopics))
	loaded(t, c, &memLog{})
	a := &cgClient{t: t, c: c, id: "A", owned: assignment{}}
	b := &cgClient{t: t, c: c, id: "B", owned: assignment{}}
	a.beat()
	b.beat()
	a.beat()
	a.beat()
	b.beat()
	if a.owned.count()+b.owned.count() != 8 {
		t.Fatalf("A %v B %v", a.owned, b.owned)
	}
	deadline := time.Now().Add(20 * time.Second)
	for a.owned.count() != 8 {
		if time.Now().After(deadline) {
			t.Fatalf("B's partitions never came to A: %v", a.owned)
		}
		time.Sleep(50 * time.Millisecond)
		a.beat()
	}
}

// TestAssignors: uniform is balanced and sticky; range gives contiguous
// ranges per topic.
func TestAssignors(t *testing.T) {
	subs := func(members ...string) map[string]map[[16]byte]bool {
		out := map[string]map[[16]byte]bool{}
		for _, m := range members {
			out[m] = map[[16]byte]bool{topicA: true, topicB: true}
		}
		return out
	}
	parts := map[[16]byte]int32{topicA: 6, topicB: 2}
	first := assignUniform(assignorInput{members: []string{"m1", "m2"}, subscribed: subs("m1", "m2"), partitions: parts})
	if first["m1"].count() != 4 || first["m2"].count() != 4 {
		t.Fatalf("uniform of 2: %v", first)
	}
	second := assignUniform(assignorInput{members: []string{"m1", "m2", "m3"}, subscribed: subs("m1", "m2", "m3"), partitions: parts, previous: first})
	moved := 0
	for _, m := range []string{"m1", "m2"} {
		moved += first[m].minus(second[m]).count()
	}
	counts := fmt.Sprint(second["m1"].count(), second["m2"].count(), second["m3"].count())
	if moved != 2 || second["m3"].count() != 2 || (counts != "3 3 2") {
		t.Fatalf("uniform after a third member: moved %d, counts %s: %v", moved, counts, second)
	}
	r := assignRange(assignorInput{members: []string{"m1", "m2", "m3", "m4"}, subscribed: subs("m1", "m2", "m3", "m4"), partitions: parts})
	if fmt.Sprint(r["m1"][topicA], r["m2"][topicA], r["m3"][topicA], r["m1"][topicB], r["m3"][topicB]) != "[0 1] [2 3] [4] [0] []" {
		t.Fatalf("range: %v", r)
	}
}

// TestConsumerGroupRegexAndNewTopic: a regex subscription matches whole
// topic names; a topic created later that matches bumps the group epoch
// and is assigned.
func TestConsumerGroupRegexAndNewTopic(t *testing.T) {
	var mu sync.Mutex
	topics := map[string]TopicMeta{"logs-a": {ID: topicA, Partitions: 2}, "xlogs-b": {ID: topicB, Partitions: 2}}
	c := newTestCoordinator(t, Config{}, WithTopics(func() map[string]TopicMeta {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(topics)
	}))
	loaded(t, c, &memLog{})
	m := &cgClient{t: t, c: c, id: "R", owned: assignment{}}
	re := "logs-.*"
	beat := func() {
		t.Helper()
		if r := m.heartbeat(nil, &re, m.owned); r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	beat()
	if m.epoch != 1 || fmt.Sprint(m.owned) != fmt.Sprint(assignment{topicA: {0, 1}}) {
		t.Fatalf("regex member: epoch %d owns %v", m.epoch, m.owned)
	}
	mu.Lock()
	topics["logs-c"] = TopicMeta{ID: [16]byte{9}, Partitions: 1}
	mu.Unlock()
	beat()
	if m.epoch != 2 || m.owned.count() != 3 || !m.owned.has([16]byte{9}, 0) {
		t.Fatalf("after logs-c appeared: epoch %d owns %v", m.epoch, m.owned)
	}
}

// TestConsumerGroupRevocationTimeout: a member that never revokes what it
// was asked to within its rebalance timeout is removed, and the partitions
// go to the member waiting for them.
func TestConsumerGroupRevocationTimeout(t *testing.T) {
	c := newConsumerCoordinator(t, &memLog{})
	beat := func(id string, epoch int32, owned assignment, rebalanceMillis int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.MemberEpoch = "cg", id, epoch
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = rebalanceMillis, []string{"b"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, tid := range owned.topicIDs() {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tid, Partitions: owned[tid]})
		}
		return c.ConsumerGroupHeartbeat(context.Background(), req, "", "")
	}
	all := assignment{topicB: {0, 1}}
	if r := beat("slow", 0, nil, 200); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("slow joins: %+v", r)
	}
	if r := beat("waiting", 0, nil, 30000); r.ErrorCode != 0 || len(r.Assignment.Topics) != 0 {
		t.Fatalf("waiting joins: %+v", r)
	}
	// Asked to revoke one, "slow" keeps reporting both.
	if r := beat("slow", 1, all, 200); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("slow asked to revoke: %+v", r)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := beat("waiting", 2, assignment{}, 30000)
		if r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.Topics) == 1 && len(r.Assignment.Topics[0].Partitions) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting member never got the partitions: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := beat("slow", 1, all, 200); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("the fenced member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestConsumerGroupDeleteAndReload: a consumer group whose members left
// can be deleted (NON_EMPTY_GROUP before), and its tombstones keep it
// deleted when the partition is loaded again; OffsetDelete refuses the
// topics the members subscribe to.
func TestConsumerGroupDeleteAndReload(t *testing.T) {
	log := &memLog{}
	c := newConsumerCoordinator(t, log)
	a := &cgClient{t: t, c: c, id: "A", owned: assignment{}}
	a.beat()
	del := func() int16 {
		return c.DeleteGroups(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"cg"}}).Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(code))
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "cg"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic, odt.Partitions = "a", []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	if r := c.OffsetDelete(context.Background(), od); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("offset delete of a subscribed topic: %+v", r)
	}
	leave := &cgClient{t: t, c: c, id: "A", epoch: leaveEpoch}
	if r := leave.heartbeat(nil, nil, nil); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := del(); code != 0 {
		t.Fatalf("delete of the empty group: %v", kerr.ErrorForCode(code))
	}
	c.Close()
	c2 := newConsumerCoordinator(t, log)
	d := c2.ConsumerGroupDescribe(context.Background(), &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}})
	if d.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after a reload: %+v", d.Groups[0])
	}
}

// TestConsumerGroupLoadedMemberExpires: after a load, a member that never
// heartbeats the new coordinator is removed after the session timeout and
// its partitions go to the one that does.
func TestConsumerGroupLoadedMemberExpires(t *testing.T) {
	log := &memLog{}
	cfg := Config{ConsumerSessionTimeout: 400 * time.Millisecond, ConsumerHeartbeatInterval: 50 * time.Millisecond}
	c := newTestCoordinator(t, cfg, WithTopics(consumerTestTopics))
	loaded(t, c, log)
	a := &cgClient{t: t, c: c, id: "A", owned: assignment{}}
	b := &cgClient{t: t, c: c, id: "B", owned: assignment{}}
	a.beat()
	b.beat()
	a.beat()
	a.beat()
	b.beat()
	if a.owned.count() != 4 || b.owned.count() != 4 {
		t.Fatalf("A %v B %v", a.owned, b.owned)
	}
	c.Close()
	c2 := newTestCoordinator(t, cfg, WithTopics(consumerTestTopics))
	loaded(t, c2, log)
	a.c = c2
	deadline := time.Now().Add(20 * time.Second)
	for a.owned.count() != 8 {
		if time.Now().After(deadline) {
			t.Fatalf("B's partitions never came to A after the load: %v", a.owned)
		}
		time.Sleep(50 * time.Millisecond)
		a.beat()
	}
}
