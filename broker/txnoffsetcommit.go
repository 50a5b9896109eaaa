package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleTxnOffsetCommit commits a transactional producer's consumed
// offsets into its transaction (the group coordinator holds them pending
// until the marker). Kafka's checks: Write on the transactional id, Read on
// the group (every partition refused otherwise), Read on each topic (its
// partitions get TOPIC_AUTHORIZATION_FAILED, the others are committed).
func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.TxnOffsetCommitRequest)
	refuse := func(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) []kmsg.TxnOffsetCommitResponseTopic {
		var out []kmsg.TxnOffsetCommitResponseTopic
		for _, t := range topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			out = append(out, st)
		}
		return out
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Default()
	resp.SetVersion(req.Version)
	switch {
	case !b.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		resp.Topics = refuse(req.Topics, errTxnAuth.Code)
		return kmsgReply{resp}, nil
	case !b.authorizeGroup(r, acl.OpRead, req.Group):
		resp.Topics = refuse(req.Topics, errGroupAuth.Code)
		return kmsgReply{resp}, nil
	}
	var allowed, denied []kmsg.TxnOffsetCommitRequestTopic
	read := b.topicAuthorizer(r, acl.OpRead)
	for _, t := range req.Topics {
		if read.allowed(t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	if len(allowed) > 0 {
		sub := *req
		sub.Topics = allowed
		resp = b.groups.TxnOffsetCommit(ctx, &sub)
	}
	resp.Topics = append(resp.Topics, refuse(denied, errTopicAuth.Code)...)
	return kmsgReply{resp}, nil
}
