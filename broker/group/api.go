package group

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request methods take the decoded request and return its response with
// the request's version set. Joins and syncs block until the rebalance
// answers them; when ctx ends first (the client went away) they return
// nil and the member's session timer decides its fate.

// JoinGroup handles a JoinGroup request from clientID at clientHost.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	fill := func(o joinOutcome) *kmsg.JoinGroupResponse {
		resp.ErrorCode, resp.MemberID, resp.Generation, resp.LeaderID = o.err, o.memberID, o.generation, o.leader
		if o.err == 0 {
			resp.ProtocolType = kmsg.StringPtr(o.protocolType)
			resp.Protocol = kmsg.StringPtr(o.protocol)
		}
		resp.Members = o.members
		if resp.Members == nil {
			resp.Members = []kmsg.JoinGroupResponseMember{}
		}
		resp.SkipAssignment = o.skipAssignment && req.Version >= 9
		return resp
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	switch {
	case req.Group == "":
		return fill(joinOutcome{err: kerr.InvalidGroupID.Code, memberID: req.MemberID, generation: -1})
	case session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout:
		return fill(joinOutcome{err: kerr.InvalidSessionTimeout.Code, memberID: req.MemberID, generation: -1})
	}
	if rebalance <= 0 {
		rebalance = session
	}
	g, _, code := c.lookup(req.Group, true)
	if code != 0 {
		return fill(joinOutcome{err: code, memberID: req.MemberID, generation: -1})
	}
	g.mu.Lock()
	out, ch := g.join(req, clientID, clientHost, session, rebalance)
	g.mu.Unlock()
	if ch == nil {
		return fill(out)
	}
	select {
	case out := <-ch:
		return fill(out)
	case <-ctx.Done():
		return nil
	}
}

// SyncGroup handles a SyncGroup request.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	fill := func(o syncOutcome, g *group) *kmsg.SyncGroupResponse {
		resp.ErrorCode = o.err
		resp.MemberAssignment = o.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		if o.err == 0 && g != nil {
			g.mu.Lock()
			resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
			g.mu.Unlock()
		}
		return resp
	}
	if req.Group == "" {
		return fill(syncOutcome{err: kerr.InvalidGroupID.Code}, nil)
	}
	g, _, code := c.lookup(req.Group, false)
	switch {
	case code != 0:
		return fill(syncOutcome{err: code}, nil)
	case g == nil:
		return fill(syncOutcome{err: kerr.UnknownMemberID.Code}, nil)
	}
	g.mu.Lock()
	out, ch := g.sync(req)
	g.mu.Unlock()
	if ch == nil {
		return fill(out, g)
	}
	select {
	case out := <-ch:
		return fill(out, g)
	case <-ctx.Done():
		return nil
	}
}

// Heartbeat handles a Heartbeat request.
func (c *Coordinator) Heartbeat(_ context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, _, code := c.lookup(req.Group, false)
	switch {
	case code != 0:
		resp.ErrorCode = code
	case g == nil:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	default:
		g.mu.Lock()
		resp.ErrorCode = g.heartbeat(req)
		g.mu.Unlock()
	}
	return resp
}

// LeaveGroup handles a LeaveGroup request: one member below v3, a batch
// (by member id or instance id) from v3.
func (c *Coordinator) LeaveGroup(_ context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	members := req.Members
	if req.Version < 3 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, _, code := c.lookup(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		if g == nil {
			rm.ErrorCode = kerr.UnknownMemberID.Code
		} else {
			g.mu.Lock()
			rm.ErrorCode = g.leave(lm.MemberID, lm.InstanceID)
			g.mu.Unlock()
		}
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}
