package broker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/sasl"
)

// scramAdminTimeout bounds the coordination-service work of one
// DescribeUserScramCredentials or AlterUserScramCredentials.
const scramAdminTimeout = 30 * time.Second

// Kafka's messages (ZkAdminManager), which kafka-configs prints.
const usernameMustNotBeEmpty = "Username must not be empty"

// handleDescribeUserSCRAMCredentials lists the SCRAM mechanisms and
// iterations of users, read from /config/users, as Kafka 2.8's
// ZkAdminManager does: no users means every user with a SCRAM credential
// (sorted); an explicit user without one is RESOURCE_NOT_FOUND, an empty
// name too, and a name asked twice DUPLICATE_RESOURCE (one result each).
func (b *Broker) handleDescribeUserSCRAMCredentials(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	ctx, cancel := context.WithTimeout(ctx, scramAdminTimeout)
	defer cancel()
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
		return kmsgReply{resp}, nil
	}
	store, err := b.ScramCredentials()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return kmsgReply{resp}, nil
	}
	if len(req.Users) == 0 {
		all, err := store.Users(ctx)
		if err != nil {
			e := scramErrorCode(err)
			resp.ErrorCode, resp.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
			return kmsgReply{resp}, nil
		}
		users := make([]string, 0, len(all))
		for u := range all {
			users = append(users, u)
		}
		slices.Sort(users)
		for _, u := range users {
			if res, ok := describeScramUser(u, all[u]); ok {
				resp.Results = append(resp.Results, res)
			}
		}
		return kmsgReply{resp}, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		name := u.Name
		if done[name] {
			continue
		}
		done[name] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		switch {
		case name == "":
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr(usernameMustNotBeEmpty)
		case count[name] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		default:
			uc, err := store.ReadUser(ctx, name)
			if err != nil {
				e := scramErrorCode(err)
				res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
				break
			}
			var ok bool
			if res, ok = describeScramUser(name, uc.Config); !ok {
				res.ErrorCode = kerr.ResourceNotFound.Code
				res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return kmsgReply{resp}, nil
}

// describeScramUser is the result for a user's config; ok is false when it
// holds no SCRAM credential.
func describeScramUser(user string, cfg map[string]string) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool) {
	res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	res.User = user
	for _, m := range sasl.ScramMechanisms {
		v, ok := cfg[m.Name]
		if !ok {
			continue
		}
		c, err := sasl.ParseScramCredential(v)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
			res.CredentialInfos = nil
			return res, true
		}
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = m.Type, int32(c.Iterations)
		res.CredentialInfos = append(res.CredentialInfos, info)
	}
	return res, len(res.CredentialInfos) > 0 || res.ErrorCode != 0
}
