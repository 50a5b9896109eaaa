package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// aclFilter reads a DescribeAcls or DeleteAcls filter; v0 filters are
// literal, as in Kafka.
func aclFilter(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) acl.Filter {
	f := acl.Filter{Type: acl.ResourceType(rt), Name: name, Pattern: acl.PatternType(pt), Principal: principal,
		Host: host, Operation: acl.Operation(op), Permission: acl.Permission(perm)}
	if version == 0 {
		f.Pattern = acl.PatternLiteral
	}
	return f
}

// handleDescribeACLs lists the cached bindings a filter selects, grouped
// by resource pattern, after Describe on the cluster.
func (b *Broker) handleDescribeACLs(_ context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case b.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(securityDisabled)
		return kmsgReply{resp}, nil
	case !b.authorizeCluster(r, acl.OpDescribe):
		resp.ErrorCode, resp.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
		return kmsgReply{resp}, nil
	}
	f := aclFilter(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return kmsgReply{resp}, nil
	}
	for _, bd := range b.authz.authz.Bindings(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(bd.Pattern.Type) ||
			resp.Resources[n-1].ResourceName != bd.Pattern.Name ||
			resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(bd.Pattern.Pattern) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(bd.Pattern.Type)
			res.ResourceName = bd.Pattern.Name
			res.ResourcePatternType = kmsg.ACLResourcePatternType(bd.Pattern.Pattern)
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = bd.Entry.Principal, bd.Entry.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(bd.Entry.Operation), kmsg.ACLPermissionType(bd.Entry.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return kmsgReply{resp}, nil
}
