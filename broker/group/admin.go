package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups handles a ListGroups request: the groups of the partitions
// loaded here, filtered by state (v4+, case-insensitive) and type (v5+;
// every group here is "classic").
func (c *Coordinator) ListGroups(_ context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	wantState := func(s string) bool {
		return len(req.StatesFilter) == 0 || slices.ContainsFunc(req.StatesFilter, func(f string) bool { return strings.EqualFold(f, s) })
	}
	wantType := func(t string) bool {
		return len(req.TypesFilter) == 0 || slices.ContainsFunc(req.TypesFilter, func(f string) bool { return strings.EqualFold(f, t) })
	}
	groups := c.allGroups()
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.id, b.id) })
	for _, g := range groups {
		g.mu.Lock()
		st, pt, name, typ := g.state, g.protocolType, g.state.String(), "classic"
		if g.cg != nil {
			pt, name, typ = "consumer", g.cg.stateName(), "consumer"
		}
		g.mu.Unlock()
		if st == stateDead || !wantState(name) || !wantType(typ) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, pt, name, typ
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// DescribeGroups handles a DescribeGroups request. A group unknown here
// is described as Dead with no error, as Kafka's classic coordinator
// does; members carry their metadata and assignment only while Stable.
func (c *Coordinator) DescribeGroups(_ context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		dg.Members = []kmsg.DescribeGroupsResponseGroupMember{}
		dg.AuthorizedOperations = -2147483648
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
			dg.State = stateDead.String()
		default:
			g.mu.Lock()
			if g.cg != nil {
				// Kafka describes a consumer-protocol group only with
				// ConsumerGroupDescribe; admin clients fall back on this.
				dg.ErrorCode = kerr.GroupIDNotFound.Code
				dg.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a classic group.")
				g.mu.Unlock()
				break
			}
			dg.State, dg.ProtocolType = g.state.String(), g.protocolType
			stable := g.state == stateStable
			if stable {
				dg.Protocol = g.protocol
			}
			for _, m := range g.orderedMembers() {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
				if stable {
					dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
				}
				dg.Members = append(dg.Members, dm)
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// DeleteGroups handles a DeleteGroups request: a group with no members
// has its offsets deleted (tombstones in the log, nodes in the registry),
// the offsets its open transactions commit as well, and is forgotten.
func (c *Coordinator) DeleteGroups(_ context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		dg.ErrorCode = c.deleteGroup(id)
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(id string) int16 {
	if id == "" {
		return kerr.InvalidGroupID.Code
	}
	g, ps, code := c.lookup(id, false)
	switch {
	case code != 0:
		return code
	case g == nil:
		return kerr.GroupIDNotFound.Code
	}
	ps.writeMu.Lock()
	defer ps.writeMu.Unlock()
	g.mu.Lock()
	switch {
	case g.state == stateDead:
		g.mu.Unlock()
		return kerr.GroupIDNotFound.Code
	case g.hasMembers():
		g.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	var records []Record
	for _, t := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[t]) {
			records = append(records, offsetTombstone(id, t, p))
		}
	}
	// The offsets open transactions commit get tombstones too (one per
	// partition not committed already), as Kafka's coordinator writes
	// them: the transactions' markers later bring none of them back, here
	// or when the partition is loaded again.
	pendingOnly := map[TopicPartition]bool{}
	for _, offs := range g.pendingTxn {
		for tp := range offs {
			if _, ok := g.offsets[tp.Topic][tp.Partition]; !ok {
				pendingOnly[tp] = true
			}
		}
	}
	for _, tp := range sortedTopicPartitions(pendingOnly) {
		records = append(records, offsetTombstone(id, tp.Topic, tp.Partition))
	}
	if g.cg != nil {
		records = append(records, cgGroupTombstones(id)...)
	}
	// g.mu stays held across the append so that no member joins a group
	// being deleted.
	if len(records) > 0 {
		if err := ps.log.Append(records); err != nil {
			g.mu.Unlock()
			return c.appendCode(err)
		}
		ps.nextPos()
	}
	g.unload()
	g.offsets = map[string]map[int32]committed{}
	g.pendingTxn = nil
	g.deadCode = kerr.CoordinatorNotAvailable.Code
	g.mu.Unlock()
	c.forget(ps, g)
	c.registryRemove(id, nil)
	return 0
}
