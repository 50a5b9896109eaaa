package broker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// rawGroup drives the group APIs over one raw connection.
type rawGroup struct {
	t     *testing.T
	c     *rawConn
	group string
}

func (g rawGroup) join(version int16, memberID string, instanceID *string, protocolType string, sessionMs int32) *kmsg.JoinGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID = g.group, memberID, instanceID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, 10000
	req.ProtocolType = protocolType
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("meta-"+g.group)
	req.Protocols = append(req.Protocols, p)
	return g.c.roundTrip(req).(*kmsg.JoinGroupResponse)
}

// joinFully joins as a new member, answering MEMBER_ID_REQUIRED.
func (g rawGroup) joinFully(version int16) *kmsg.JoinGroupResponse {
	g.t.Helper()
	resp := g.join(version, "", nil, "consumer", 10000)
	if version >= 4 {
		if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
			g.t.Fatalf("JoinGroup v%d without member id: error %d member %q, want MEMBER_ID_REQUIRED", version, resp.ErrorCode, resp.MemberID)
		}
		resp = g.join(version, resp.MemberID, nil, "consumer", 10000)
	}
	if resp.ErrorCode != 0 || resp.Generation < 1 || resp.LeaderID != resp.MemberID {
		g.t.Fatalf("JoinGroup v%d: %+v", version, resp)
	}
	return resp
}

func (g rawGroup) sync(version int16, memberID string, gen int32, assign []byte) *kmsg.SyncGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, memberID, gen
	if assign != nil {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = memberID, assign
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	return g.c.roundTrip(req).(*kmsg.SyncGroupResponse)
}

func (g rawGroup) heartbeat(version int16, memberID string, gen int32) int16 {
	g.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, memberID, gen
	return g.c.roundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode
}

func (g rawGroup) commit(version int16, memberID string, gen int32, topic string, p int32, offset int64, meta string) int16 {
	g.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, memberID, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.Metadata = p, offset, kmsg.StringPtr(meta)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := g.c.roundTrip(req).(*kmsg.OffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (g rawGroup) fetch(version int16, topic string, p int32) kmsg.OffsetFetchResponseTopicPartition {
	g.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(version)
	req.Group = g.group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := g.c.roundTrip(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		g.t.Fatalf("OffsetFetch v%d: %+v", version, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// findCoordinator waits until the group's coordinator is found (the
// offsets topic is created on first use) and is b.
func findCoordinator(t *testing.T, c *rawConn, group string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "FindCoordinator "+group+" to succeed", func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(3)
		req.CoordinatorKey = group
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		return resp.ErrorCode == 0, fmt.Sprintf("error %d", resp.ErrorCode)
	})
}

// awaitLoaded retries a heartbeat until the coordinator has loaded the
// group's partition (no COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR).
func awaitLoaded(t *testing.T, b *testBroker, group string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "the group's offsets partition to load", func() (bool, string) {
		return b.groups.CoordinatorError(group) == 0, ""
	})
}

// TestGroupBadRequests: the error codes Kafka sends for unknown members,
// stale generations, bad session timeouts, foreign protocol types,
// oversized metadata and assignments, commits for partitions that do not
// exist and deletes of live groups; none of them changes what is stored.
func TestGroupBadRequests(t *testing.T) {
	b := newTestBroker(t, func(c *config.Config) {
		groupTestConfig(c)
		c.Groups.MaxAssignmentBytes = 1000
		c.Groups.OffsetMetadataMaxBytes = 10
	})
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopic(ctx, "bt", 2); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	g := rawGroup{t: t, c: c, group: "bad"}
	findCoordinator(t, c, g.group)
	awaitLoaded(t, b, g.group)

	if got := g.join(5, "", nil, "consumer", 10).ErrorCode; got != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("join with a 10 ms session: error %d", got)
	}
	if got := g.join(5, "no-such-member", nil, "consumer", 10000).ErrorCode; got != kerr.UnknownMemberID.Code {
		t.Fatalf("join with an unknown member id: error %d", got)
	}
	j := g.joinFully(5)
	id, gen := j.MemberID, j.Generation
	if got := g.join(5, "", nil, "connect", 10000).ErrorCode; got != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join with another protocol type: error %d", got)
	}

	for _, tc := range []struct {
		name    string
		member  string
		gen     int32
		code    *kerr.Error
		hbToo   bool
		syncToo bool
	}{
		{"unknown member", "ghost", gen, kerr.UnknownMemberID, true, true},
		{"stale generation", id, gen - 1, kerr.IllegalGeneration, true, true},
		{"future generation", id, gen + 5, kerr.IllegalGeneration, true, true},
	} {
		if got := g.heartbeat(3, tc.member, tc.gen); got != tc.code.Code {
			t.Fatalf("heartbeat, %s: error %d, want %s", tc.name, got, tc.code.Message)
		}
		if got := g.sync(3, tc.member, tc.gen, []byte("x")).ErrorCode; got != tc.code.Code {
			t.Fatalf("sync, %s: error %d, want %s", tc.name, got, tc.code.Message)
		}
		if got := g.commit(7, tc.member, tc.gen, "bt", 0, 5, ""); got != tc.code.Code {
			t.Fatalf("commit, %s: error %d, want %s", tc.name, got, tc.code.Message)
		}
	}

	// An assignment over the bound fails the sync and the group rebalances.
	if got := g.sync(3, id, gen, bytes.Repeat([]byte("a"), 2000)).ErrorCode; got != kerr.UnknownServerError.Code {
		t.Fatalf("oversized assignment: error %d", got)
	}
	if got := g.heartbeat(3, id, gen); got != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after the failed sync: error %d, want REBALANCE_IN_PROGRESS", got)
	}
	j = g.join(5, id, nil, "consumer", 10000)
	if j.ErrorCode != 0 || j.Generation != gen+1 {
		t.Fatalf("rejoin: %+v", j)
	}
	gen = j.Generation
	if s := g.sync(3, id, gen, []byte("assignment")); s.ErrorCode != 0 || string(s.MemberAssignment) != "assignment" {
		t.Fatalf("sync: %+v", s)
	}
	if got := g.heartbeat(3, id, gen); got != 0 {
		t.Fatalf("heartbeat: error %d", got)
	}

	// Commits: good, too much metadata, a partition that does not exist,
	// a topic that does not exist.
	if got := g.commit(7, id, gen, "bt", 1, 42, "ok"); got != 0 {
		t.Fatalf("commit: error %d", got)
	}
	if got := g.commit(7, id, gen, "bt", 1, 43, strings.Repeat("m", 11)); got != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("commit with 11 bytes of metadata: error %d", got)
	}
	if got := g.commit(7, id, gen, "bt", 2, 1, ""); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit for partition 2 of 2: error %d", got)
	}
	if got := g.commit(7, id, gen, "nope", 0, 1, ""); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit for an unknown topic: error %d", got)
	}
	// A simple (generation -1) commit to a group with members.
	if got := g.commit(7, "", -1, "bt", 1, 99, ""); got != kerr.UnknownMemberID.Code {
		t.Fatalf("simple commit to a live group: error %d", got)
	}
	if o := g.fetch(5, "bt", 1); o.Offset != 42 || o.Metadata == nil || *o.Metadata != "ok" || o.ErrorCode != 0 {
		t.Fatalf("fetched %+v, want 42/ok", o)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{g.group, "never-existed", ""}
	dresp := c.roundTrip(del).(*kmsg.DeleteGroupsResponse)
	if dresp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || dresp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code ||
		dresp.Groups[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("DeleteGroups: %+v", dresp.Groups)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = g.group
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "bt"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}
	od.Topics = append(od.Topics, odt)
	// The member's protocol metadata is not a consumer subscription, so
	// the subscribed topics are unknown: nothing is subscribed.
	if resp := c.roundTrip(od).(*kmsg.OffsetDeleteResponse); resp.ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %+v", resp)
	}
	if o := g.fetch(5, "bt", 1); o.Offset != -1 {
		t.Fatalf("after OffsetDelete fetched %+v", o)
	}

	// Leaving twice: the second time the member is unknown.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(1)
	leave.Group, leave.MemberID = g.group, id
	if got := c.roundTrip(leave).(*kmsg.LeaveGroupResponse).ErrorCode; got != 0 {
		t.Fatalf("leave: error %d", got)
	}
	if got := c.roundTrip(leave).(*kmsg.LeaveGroupResponse).ErrorCode; got != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave: error %d", got)
	}
	if got := g.commit(7, "", -1, "bt", 0, 7, ""); got != 0 {
		t.Fatalf("simple commit to the empty group: error %d", got)
	}
	dresp = c.roundTrip(del).(*kmsg.DeleteGroupsResponse)
	if dresp.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups of the empty group: error %d", dresp.Groups[0].ErrorCode)
	}
	if o := g.fetch(5, "bt", 0); o.Offset != -1 {
		t.Fatalf("after DeleteGroups fetched %+v", o)
	}

	// Unknown coordinator types and empty transactional ids are refused
	// for good, not "not available".
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorType = 2
	fc.CoordinatorKeys = []string{"txn"}
	if got := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator of key type 2: error %d", got)
	}
	fc.CoordinatorType = 1
	fc.CoordinatorKeys = []string{""}
	if got := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator for an empty transactional id: error %d", got)
	}
}
