package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
)

// aclAdminTimeout bounds the coordination-service work of one CreateAcls
// or DeleteAcls.
const aclAdminTimeout = 30 * time.Second

// securityDisabled is Kafka's answer to the ACL APIs without an
// authorizer.
const securityDisabled = "No Authorizer is configured on the broker"

// handleCreateACLs stores bindings in the coordination service (Kafka's
// ZooKeeper layout, broker/acl), as Kafka's AclAuthorizer does: Alter on
// the cluster is required; each creation has its own result (INVALID_REQUEST
// for a binding Kafka refuses, SECURITY_DISABLED without an authorizer).
func (b *Broker) handleCreateACLs(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	fail := func(e *kerr.Error, msg string) (reply, error) {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
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
	bindings := make([]acl.Binding, len(req.Creations))
	for i, c := range req.Creations {
		pt := acl.PatternType(c.ResourcePatternType)
		if req.Version == 0 {
			pt = acl.PatternLiteral
		}
		bindings[i] = acl.Binding{
			Pattern: acl.Pattern{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName, Pattern: pt},
			Entry: acl.Entry{Principal: c.Principal, Host: c.Host, Operation: acl.Operation(c.Operation),
				Permission: acl.Permission(c.PermissionType)},
		}
	}
	ctx, cancel := context.WithTimeout(ctx, aclAdminTimeout)
	defer cancel()
	for _, err := range b.authz.store.Create(ctx, bindings) {
		res := kmsg.NewCreateACLsResponseResult()
		if err != nil {
			e := aclErrorCode(err)
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(err.Error())
		}
		resp.Results = append(resp.Results, res)
	}
	return kmsgReply{resp}, nil
}

// aclErrorCode maps broker/acl's errors to Kafka's codes.
func aclErrorCode(err error) *kerr.Error {
	switch {
	case errors.Is(err, acl.ErrInvalidBinding), errors.Is(err, acl.ErrUnknownName):
		return kerr.InvalidRequest
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, acl.ErrConflict):
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}
