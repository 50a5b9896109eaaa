package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/group"
)

// The group APIs' checks, as Kafka's: Read on the group to join, sync,
// heartbeat, leave and commit; Describe on it to fetch offsets and
// describe it; Delete to delete it or its offsets; and the topics of
// offsets (Read to commit, Describe to fetch, Read to delete), refused
// per topic with TOPIC_AUTHORIZATION_FAILED.

// offsetCommitAuthorized answers OffsetCommit for the partitions r's
// principal may commit, through commit, and refuses the others.
func (b *Broker) offsetCommitAuthorized(ctx context.Context, r *request, commit func(context.Context, *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse) *kmsg.OffsetCommitResponse {
	req := r.msg.(*kmsg.OffsetCommitRequest)
	if b.authz == nil {
		return commit(ctx, req)
	}
	refuse := func(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
		var out []kmsg.OffsetCommitResponseTopic
		for _, t := range topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			out = append(out, st)
		}
		return out
	}
	if !b.authorizeGroup(r, acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = refuse(req.Topics, errGroupAuth.Code)
		return resp
	}
	var allowed, denied []kmsg.OffsetCommitRequestTopic
	read := b.topicAuthorizer(r, acl.OpRead)
	for _, t := range req.Topics {
		if read.allowed(t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if len(denied) == 0 {
		return commit(ctx, req)
	}
	var resp *kmsg.OffsetCommitResponse
	if len(allowed) > 0 {
		sub := *req
		sub.Topics = allowed
		resp = commit(ctx, &sub)
	} else {
		resp = req.ResponseKind().(*kmsg.OffsetCommitResponse)
	}
	resp.Topics = append(resp.Topics, refuse(denied, errTopicAuth.Code)...)
	return resp
}

// offsetFetchAuthorized answers OffsetFetch with the groups and topics r's
// principal may Describe: a refused group answers GROUP_AUTHORIZATION_FAILED,
// a named refused topic TOPIC_AUTHORIZATION_FAILED, and when every topic is
// asked for, the refused ones are left out.
func (b *Broker) offsetFetchAuthorized(ctx context.Context, r *request, fetch func(context.Context, *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	req := r.msg.(*kmsg.OffsetFetchRequest)
	if b.authz == nil {
		return fetch(ctx, req)
	}
	describe := b.topicAuthorizer(r, acl.OpDescribe)
	if req.Version < 8 {
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if !b.authorizeGroup(r, acl.OpDescribe, req.Group) {
			resp.ErrorCode = errGroupAuth.Code
			for _, t := range req.Topics {
				st := kmsg.NewOffsetFetchResponseTopic()
				st.Topic = t.Topic
				for _, p := range t.Partitions {
					sp := kmsg.NewOffsetFetchResponseTopicPartition()
					sp.Partition, sp.Offset, sp.ErrorCode = p, -1, errGroupAuth.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp
		}
		var allowed, denied []kmsg.OffsetFetchRequestTopic
		for _, t := range req.Topics {
			if describe.allowed(t.Topic) {
				allowed = append(allowed, t)
			} else {
				denied = append(denied, t)
			}
		}
		if req.Topics != nil && len(allowed) == 0 {
			resp.Topics = nil
		} else {
			sub := *req
			if req.Topics != nil {
				sub.Topics = allowed
			}
			resp = fetch(ctx, &sub)
		}
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if req.Topics != nil || b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				kept = append(kept, t)
			}
		}
		resp.Topics = kept
		for _, t := range denied {
			st := kmsg.NewOffsetFetchResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseTopicPartition()
				sp.Partition, sp.Offset, sp.ErrorCode = p, -1, errTopicAuth.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	// v8+: several groups.
	sub := *req
	sub.Groups = nil
	var refused []kmsg.OffsetFetchResponseGroup
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for _, g := range req.Groups {
		if !b.authorizeGroup(r, acl.OpDescribe, g.Group) {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, errGroupAuth.Code
			refused = append(refused, rg)
			continue
		}
		if g.Topics != nil {
			var allowed []kmsg.OffsetFetchRequestGroupTopic
			for _, t := range g.Topics {
				if describe.allowed(t.Topic) {
					allowed = append(allowed, t)
				} else {
					deniedTopics[g.Group] = append(deniedTopics[g.Group], t)
				}
			}
			if allowed == nil {
				allowed = []kmsg.OffsetFetchRequestGroupTopic{}
			}
			g.Topics = allowed
		}
		sub.Groups = append(sub.Groups, g)
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if len(sub.Groups) > 0 {
		resp = fetch(ctx, &sub)
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				kept = append(kept, t)
			}
		}
		g.Topics = kept
		for _, t := range deniedTopics[g.Group] {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				sp.Partition, sp.Offset, sp.ErrorCode = p, -1, errTopicAuth.Code
				st.Partitions = append(st.Partitions, sp)
			}
			g.Topics = append(g.Topics, st)
		}
	}
	resp.Groups = append(resp.Groups, refused...)
	return resp
}

// listGroupsAuthorized keeps the groups r's principal may Describe, all
// of them with Describe on the cluster.
func (b *Broker) listGroupsAuthorized(r *request, resp *kmsg.ListGroupsResponse) *kmsg.ListGroupsResponse {
	if b.authz == nil || b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		return resp
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if b.authorizeQuiet(r, acl.OpDescribe, acl.ResourceGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	return resp
}

// describeGroupsAuthorized describes the groups r's principal may
// Describe and refuses the others.
func (b *Broker) describeGroupsAuthorized(ctx context.Context, r *request, coord *group.Coordinator) *kmsg.DescribeGroupsResponse {
	req := r.msg.(*kmsg.DescribeGroupsRequest)
	if b.authz == nil {
		return coord.DescribeGroups(ctx, req)
	}
	sub := *req
	sub.Groups = nil
	var refused []string
	for _, g := range req.Groups {
		if b.authorizeGroup(r, acl.OpDescribe, g) {
			sub.Groups = append(sub.Groups, g)
		} else {
			refused = append(refused, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	if len(sub.Groups) > 0 {
		resp = coord.DescribeGroups(ctx, &sub)
	}
	for _, g := range refused {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, errGroupAuth.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// deleteGroupsAuthorized deletes the groups r's principal may Delete and
// refuses the others.
func (b *Broker) deleteGroupsAuthorized(ctx context.Context, r *request, coord *group.Coordinator) *kmsg.DeleteGroupsResponse {
	req := r.msg.(*kmsg.DeleteGroupsRequest)
	if b.authz == nil {
		return coord.DeleteGroups(ctx, req)
	}
	sub := *req
	sub.Groups = nil
	var refused []string
	for _, g := range req.Groups {
		if b.authorizeGroup(r, acl.OpDelete, g) {
			sub.Groups = append(sub.Groups, g)
		} else {
			refused = append(refused, g)
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	if len(sub.Groups) > 0 {
		resp = coord.DeleteGroups(ctx, &sub)
	}
	for _, g := range refused {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, errGroupAuth.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// offsetDeleteAuthorized needs Delete on the group and Read on each topic.
func (b *Broker) offsetDeleteAuthorized(ctx context.Context, r *request, coord *group.Coordinator) *kmsg.OffsetDeleteResponse {
	req := r.msg.(*kmsg.OffsetDeleteRequest)
	if b.authz == nil {
		return coord.OffsetDelete(ctx, req)
	}
	if !b.authorizeGroup(r, acl.OpDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = errGroupAuth.Code
		return resp
	}
	sub := *req
	sub.Topics = nil
	var refused []kmsg.OffsetDeleteRequestTopic
	for _, t := range req.Topics {
		if b.authorizeTopic(r, acl.OpRead, t.Topic) {
			sub.Topics = append(sub.Topics, t)
		} else {
			refused = append(refused, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if len(sub.Topics) > 0 || len(refused) == 0 {
		resp = coord.OffsetDelete(ctx, &sub)
	}
	for _, t := range refused {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p.Partition, errTopicAuth.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
