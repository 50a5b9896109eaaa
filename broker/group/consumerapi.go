package group

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat request (KIP-848)
// from clientID at clientHost: joins (epoch 0), leaves (-1, static -2) and
// heartbeats of the consumer group protocol. The group's records are
// appended before the answer, so a new coordinator resumes the group.
func (c *Coordinator) ConsumerGroupHeartbeat(_ context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	resp.HeartbeatIntervalMillis = int32(c.cfg.ConsumerHeartbeatInterval.Milliseconds())
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if code, msg := validHeartbeat(req); code != 0 {
		return fail(code, msg)
	}
	g, ps, code := c.lookup(req.Group, req.MemberEpoch == joinEpoch)
	switch {
	case code != 0:
		return fail(code, "")
	case g == nil:
		return fail(kerr.UnknownMemberID.Code, "Group "+req.Group+" has no member "+req.MemberID+".")
	}
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.consumerHeartbeat(req, clientID, clientHost)
	if out.code != 0 {
		return fail(out.code, out.message)
	}
	if len(out.records) > 0 {
		if err := ps.log.Append(out.records); err != nil {
			return fail(c.appendCode(err), "")
		}
		ps.nextPos()
	}
	resp.MemberID = kmsg.StringPtr(out.memberID)
	resp.MemberEpoch = out.epoch
	resp.Assignment = out.assigned
	return resp
}

// ConsumerGroupDescribe handles a ConsumerGroupDescribe request: a group
// that is not a consumer-protocol group here answers GROUP_ID_NOT_FOUND
// (admin clients then describe it with DescribeGroups).
func (c *Coordinator) ConsumerGroupDescribe(_ context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	names := map[[16]byte]string{}
	for name, t := range c.topicMetadata() {
		names[t.ID] = name
	}
	toWire := func(a assignment) kmsg.Assignment {
		out := kmsg.NewAssignment()
		out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
		for _, id := range a.topicIDs() {
			tp := kmsg.AssignmentTopicPartition{TopicID: id, Topic: names[id], Partitions: slices.Clone(a[id])}
			out.TopicPartitions = append(out.TopicPartitions, tp)
		}
		return out
	}
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		if req.IncludeAuthorizedOperations {
			dg.AuthorizedOperations = groupOperationsAuthorizedOnAll
		}
		g, _, code := c.lookup(id, false)
		switch {
		case id == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case code != 0:
			dg.ErrorCode = code
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		default:
			g.mu.Lock()
			cg := g.cg
			if cg == nil || g.state == stateDead {
				dg.ErrorCode = kerr.GroupIDNotFound.Code
				dg.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a consumer group.")
				g.mu.Unlock()
				break
			}
			dg.State, dg.Epoch, dg.AssignmentEpoch = cg.stateName(), cg.epoch, cg.assignmentEpoch
			dg.AssignorName = cg.chooseAssignor(c.cfg.ConsumerAssignors)
			dg.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
			for _, mid := range sortedKeys(cg.members) {
				m := cg.members[mid]
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
				dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
				dm.SubscribedTopics = slices.Clone(m.topics)
				if dm.SubscribedTopics == nil {
					dm.SubscribedTopics = []string{}
				}
				dm.SubscribedTopicRegex = m.regex
				dm.Assignment, dm.TargetAssignment = toWire(m.assigned), toWire(cg.target[m.id])
				dm.MemberType = 1 // a consumer-protocol member
				dg.Members = append(dg.Members, dm)
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}
