package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleDeleteTopics deletes topics by name (v0-v5 TopicNames, v6 Topics)
// through the controller, waiting up to the request's timeout for each to
// leave this broker's metadata.
// v6 names a topic by name or by id (not both: INVALID_REQUEST, as Kafka);
// an id no topic has gets UNKNOWN_TOPIC_ID.
func (b *Broker) handleDeleteTopics(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteTopicsRequest)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	resp.SetVersion(req.Version)
	del := func(name *string, id [16]byte) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = name, id
		switch {
		case name != nil && id != [16]byte{}:
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("a topic is named by name or by id, not both")
		case name == nil:
			t, ok := topicByWireID(b.metadata(), id)
			if !ok {
				st.ErrorCode = kerr.UnknownTopicID.Code
				break
			}
			st.Topic = kmsg.StringPtr(t.Name)
			if !b.authorizeTopic(r, acl.OpDelete, t.Name) {
				st.ErrorCode = errTopicAuth.Code
				break
			}
			if err := b.DeleteTopic(ctx, t.Name); err != nil {
				st.ErrorCode = adminErrorCode(err)
				st.ErrorMessage = kmsg.StringPtr(err.Error())
			}
		case !b.authorizeTopic(r, acl.OpDelete, *name):
			st.ErrorCode = errTopicAuth.Code
		default:
			if err := b.DeleteTopic(ctx, *name); err != nil {
				st.ErrorCode = adminErrorCode(err)
				st.ErrorMessage = kmsg.StringPtr(err.Error())
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Version >= 6 {
		for _, t := range req.Topics {
			del(t.Topic, t.TopicID)
		}
	} else {
		for _, n := range req.TopicNames {
			del(kmsg.StringPtr(n), [16]byte{})
		}
	}
	return kmsgReply{resp}, nil
}
