package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleDescribeCluster describes the live brokers and the controller as
// Metadata does (describeBrokers), with the cluster id. Only the brokers'
// endpoints are served (endpoint_type 1); the controllers' (2, KRaft) are
// UNSUPPORTED_ENDPOINT_TYPE. Authorized operations are not computed
// (Kafka's "not requested" value, the minimum int32).
func (b *Broker) handleDescribeCluster(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.SetVersion(req.Version)
	resp.EndpointType = 1
	resp.ClusterAuthorizedOperations = -2147483648
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.EndpointType = req.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("only broker endpoints (endpoint type 1) are served")
		return kmsgReply{resp}, nil
	}
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
		return kmsgReply{resp}, nil
	}
	resp.ClusterID = clusterID
	md := kmsg.NewPtrMetadataResponse()
	b.describeBrokers(md, b.metadata(), b.requestListener(r))
	resp.ControllerID = md.ControllerID
	for _, mb := range md.Brokers {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port, br.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, br)
	}
	return kmsgReply{resp}, nil
}
