package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestEveryAdvertisedGroupVersion exercises every advertised version of
// the group coordinator's APIs over a raw connection, as
// TestEveryAdvertisedVersion does for the others, checking the fields
// each version adds.
func TestEveryAdvertisedGroupVersion(t *testing.T) {
	b := newTestBroker(t, groupTestConfig)
	ctx := testenv.Context(t, time.Minute)
	if err := b.CreateTopic(ctx, "gv", 2); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr())
	spec := func(k kmsg.Key) apiSpec { return apiTable[int16(k)] }
	versions := func(k kmsg.Key) []int16 {
		var out []int16
		for v := spec(k).min; v <= spec(k).max; v++ {
			out = append(out, v)
		}
		return out
	}

	// FindCoordinator: one key below v4, a batch from v4; this broker
	// coordinates everything.
	findCoordinator(t, c, "gv-probe")
	for _, v := range versions(kmsg.FindCoordinator) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g1", "g2"}
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != b.cfg.BrokerID || resp.Host != "127.0.0.1" || fmt.Sprint(resp.Port) != portOf(t, b.Addr()) {
				t.Fatalf("FindCoordinator v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "g2" || resp.Coordinators[1].ErrorCode != 0 ||
			resp.Coordinators[1].NodeID != b.cfg.BrokerID {
			t.Fatalf("FindCoordinator v%d: %+v", v, resp.Coordinators)
		}
	}

	// JoinGroup (and per group the other member APIs), a group per version.
	syncs, hbs := versions(kmsg.SyncGroup), versions(kmsg.Heartbeat)
	commits, fetches := versions(kmsg.OffsetCommit), versions(kmsg.OffsetFetch)
	leaves := versions(kmsg.LeaveGroup)
	for i, v := range versions(kmsg.JoinGroup) {
		g := rawGroup{t: t, c: c, group: fmt.Sprintf("gv-join-%d", v)}
		findCoordinator(t, c, g.group)
		awaitLoaded(t, b, g.group)
		j := g.joinFully(v)
		if len(j.Members) != 1 || j.Members[0].MemberID != j.MemberID || string(j.Members[0].ProtocolMetadata) != "meta-"+g.group {
			t.Fatalf("JoinGroup v%d members %+v", v, j.Members)
		}
		if v >= 7 && (j.ProtocolType == nil || *j.ProtocolType != "consumer") {
			t.Fatalf("JoinGroup v%d protocol type %v", v, j.ProtocolType)
		}
		if j.Protocol == nil || *j.Protocol != "range" {
			t.Fatalf("JoinGroup v%d protocol %v", v, j.Protocol)
		}
		sv := syncs[i%len(syncs)]
		s := g.sync(sv, j.MemberID, j.Generation, []byte("asg"))
		if s.ErrorCode != 0 || string(s.MemberAssignment) != "asg" || (sv >= 5 && (s.Protocol == nil || *s.Protocol != "range")) {
			t.Fatalf("SyncGroup v%d: %+v", sv, s)
		}
		if got := g.heartbeat(hbs[i%len(hbs)], j.MemberID, j.Generation); got != 0 {
			t.Fatalf("Heartbeat v%d: error %d", hbs[i%len(hbs)], got)
		}
		cv := commits[i%len(commits)]
		if got := g.commit(cv, j.MemberID, j.Generation, "gv", 1, int64(100+v), fmt.Sprint("m", v)); got != 0 {
			t.Fatalf("OffsetCommit v%d: error %d", cv, got)
		}
		fv := fetches[i%len(fetches)]
		if fv < 8 {
			o := g.fetch(fv, "gv", 1)
			if o.Offset != int64(100+v) || o.Metadata == nil || *o.Metadata != fmt.Sprint("m", v) {
				t.Fatalf("OffsetFetch v%d: %+v", fv, o)
			}
		}
		lv := leaves[i%len(leaves)]
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.SetVersion(lv)
		leave.Group, leave.MemberID = g.group, j.MemberID
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = j.MemberID
		leave.Members = append(leave.Members, lm)
		lr := c.roundTrip(leave).(*kmsg.LeaveGroupResponse)
		if lr.ErrorCode != 0 || (lv >= 3 && (len(lr.Members) != 1 || lr.Members[0].ErrorCode != 0)) {
			t.Fatalf("LeaveGroup v%d: %+v", lv, lr)
		}
	}
	// Whatever versions the loop above did not reach.
	g := rawGroup{t: t, c: c, group: "gv-rest"}
	findCoordinator(t, c, g.group)
	awaitLoaded(t, b, g.group)
	for _, v := range commits {
		if got := g.commit(v, "", -1, "gv", 0, int64(v), "simple"); got != 0 {
			t.Fatalf("simple OffsetCommit v%d: error %d", v, got)
		}
	}
	for _, v := range fetches {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		req.Group = g.group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "gv", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g.group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "gv", []int32{0, 1}
		rg.Topics = append(rg.Topics, gt)
		req.Groups = append(req.Groups, rg)
		resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		var got [2]int64
		if v >= 8 {
			if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
				t.Fatalf("OffsetFetch v%d: %+v", v, resp.Groups)
			}
			for i, p := range resp.Groups[0].Topics[0].Partitions {
				got[i] = p.Offset
			}
		} else {
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
				t.Fatalf("OffsetFetch v%d: %+v", v, resp)
			}
			for i, p := range resp.Topics[0].Partitions {
				got[i] = p.Offset
			}
		}
		if want := [2]int64{int64(commits[len(commits)-1]), -1}; got != want {
			t.Fatalf("OffsetFetch v%d: offsets %v, want %v", v, got, want)
		}
	}
	for _, v := range versions(kmsg.ListGroups) {
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(v)
		if v >= 4 {
			req.StatesFilter = []string{"empty"}
		}
		resp := c.roundTrip(req).(*kmsg.ListGroupsResponse)
		found := false
		for _, lg := range resp.Groups {
			if lg.Group == g.group {
				found = true
				if v >= 4 && lg.GroupState != "Empty" {
					t.Fatalf("ListGroups v%d: %+v", v, lg)
				}
				if v >= 5 && lg.GroupType != "classic" {
					t.Fatalf("ListGroups v%d: %+v", v, lg)
				}
			}
		}
		if resp.ErrorCode != 0 || !found {
			t.Fatalf("ListGroups v%d: %+v", v, resp)
		}
	}
	for _, v := range versions(kmsg.DescribeGroups) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{g.group, "gv-unknown"}
		req.IncludeAuthorizedOperations = true
		resp := c.roundTrip(req).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 2 || resp.Groups[0].State != "Empty" || resp.Groups[1].State != "Dead" ||
			(v >= 3 && resp.Groups[0].AuthorizedOperations <= 0) {
			t.Fatalf("DescribeGroups v%d: %+v", v, resp.Groups)
		}
	}
	for _, v := range versions(kmsg.OffsetDelete) {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.SetVersion(v)
		req.Group = g.group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "gv"
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		if resp := c.roundTrip(req).(*kmsg.OffsetDeleteResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("OffsetDelete v%d: %+v", v, resp)
		}
		if o := g.fetch(5, "gv", 0); o.Offset != -1 {
			t.Fatalf("after OffsetDelete v%d: %+v", v, o)
		}
		g.commit(7, "", -1, "gv", 0, 1, "")
	}
	for _, v := range versions(kmsg.DeleteGroups) {
		name := fmt.Sprint("gv-del-", v)
		dg := rawGroup{t: t, c: c, group: name}
		findCoordinator(t, c, name)
		awaitLoaded(t, b, name)
		dg.commit(7, "", -1, "gv", 0, 1, "")
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{name}
		resp := c.roundTrip(req).(*kmsg.DeleteGroupsResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("DeleteGroups v%d: %+v", v, resp.Groups)
		}
		if again := c.roundTrip(req).(*kmsg.DeleteGroupsResponse); again.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("DeleteGroups v%d twice: %+v", v, again.Groups)
		}
	}
}
