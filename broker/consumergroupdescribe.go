package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleConsumerGroupDescribe is answered by the group coordinator
// (broker/group); a group r's principal may not Describe answers
// GROUP_AUTHORIZATION_FAILED.
func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.ConsumerGroupDescribeRequest)
	var allowed []string
	var refused []kmsg.ConsumerGroupDescribeResponseGroup
	for _, g := range req.Groups {
		if b.authorizeGroup(r, acl.OpDescribe, g) {
			allowed = append(allowed, g)
			continue
		}
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group, dg.ErrorCode = g, errGroupAuth.Code
		refused = append(refused, dg)
	}
	sub := *req
	sub.Groups = allowed
	resp := b.groups.ConsumerGroupDescribe(ctx, &sub)
	resp.Groups = append(resp.Groups, refused...)
	return kmsgReply{resp}, nil
}
