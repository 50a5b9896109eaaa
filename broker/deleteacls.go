package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// handleDeleteACLs removes the stored bindings each filter selects (read
// from the coordination service, not the cache), after Alter on the
// cluster, and lists per filter what was removed.
func (b *Broker) handleDeleteACLs(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	fail := func(e *kerr.Error, msg string) (reply, error) {
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, res)
		}
		return kmsgReply{resp}, nil
	}
	if b.authz == nil {
		return fail(kerr.SecurityDisabled, securityDisabled)
	}
	if !b.authorizeCluster(r, acl.OpAlter) {
		return fail(errClusterAuth, errClusterAuth.Message)
	}
	filters := make([]acl.Filter, len(req.Filters))
	invalid := make([]error, len(req.Filters))
	var valid []acl.Filter
	for i, f := range req.Filters {
		filters[i] = aclFilter(req.Version, f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType)
		if invalid[i] = filters[i].Validate(); invalid[i] == nil {
			valid = append(valid, filters[i])
		}
	}
	ctx, cancel := context.WithTimeout(ctx, aclAdminTimeout)
	defer cancel()
	results := b.authz.store.Delete(ctx, valid)
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		if invalid[i] != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(invalid[i].Error())
			resp.Results = append(resp.Results, res)
			continue
		}
		out := results[0]
		results = results[1:]
		if out.Err != nil {
			e := aclErrorCode(out.Err)
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(out.Err.Error())
		}
		for _, bd := range out.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(bd.Pattern.Type), bd.Pattern.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.Pattern.Pattern)
			m.Principal, m.Host = bd.Entry.Principal, bd.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Entry.Operation), kmsg.ACLPermissionType(bd.Entry.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	return kmsgReply{resp}, nil
}
