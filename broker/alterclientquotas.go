package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/quota"
)

// handleAlterClientQuotas sets and removes quotas, one result per entry,
// as Kafka 2.8's ZkAdminManager does: each entry's entity is a user, a
// client id or both (a null name is the default), and is written in one
// compare-and-set of its node in /config/users or /config/clients with a
// change notification, which every broker follows (a user's SCRAM
// credentials in the same node are kept). Errors, per entry, leaving it
// unchanged: CLUSTER_AUTHORIZATION_FAILED without AlterConfigs on the
// cluster; INVALID_REQUEST for an entity without a user or client id, a
// type named twice, an unknown type (an "ip" too: connection_creation_rate
// is not enforced), an empty name, an unknown key, a negative value or a
// fractional byte rate. With validate_only nothing is written.
func (b *Broker) handleAlterClientQuotas(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	ctx, cancel := context.WithTimeout(ctx, scramAdminTimeout)
	defer cancel()
	alterable := b.authorizeCluster(r, acl.OpAlterConfigs)
	for _, entry := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, e := range entry.Entity {
			pe := kmsg.NewAlterClientQuotasResponseEntryEntity()
			pe.Type, pe.Name = e.Type, e.Name
			re.Entity = append(re.Entity, pe)
		}
		if !alterable {
			re.ErrorCode, re.ErrorMessage = errClusterAuth.Code, kmsg.StringPtr(errClusterAuth.Message)
			resp.Entries = append(resp.Entries, re)
			continue
		}
		e, set, remove, err := parseQuotaAlteration(entry)
		if err == nil && !req.ValidateOnly {
			err = b.quotas.store.Alter(ctx, e, set, remove)
		}
		if err != nil {
			code := kerr.InvalidRequest
			if !errors.Is(err, quota.ErrBadEntity) && !errors.Is(err, quota.ErrUnknownKey) && !errors.Is(err, quota.ErrBadValue) {
				code = scramErrorCode(err)
			}
			re.ErrorCode, re.ErrorMessage = code.Code, kmsg.StringPtr(err.Error())
		}
		resp.Entries = append(resp.Entries, re)
	}
	return kmsgReply{resp}, nil
}

// parseQuotaAlteration checks an entry as Kafka does and returns what it
// sets and removes.
func parseQuotaAlteration(entry kmsg.AlterClientQuotasRequestEntry) (quota.Entity, quota.Values, []string, error) {
	var e quota.Entity
	for _, pe := range entry.Entity {
		var part *quota.Name
		switch pe.Type {
		case quotaEntityUser:
			part = &e.User
		case quotaEntityClient:
			part = &e.Client
		case quotaEntityIP:
			return e, nil, nil, fmt.Errorf("%w: ip quotas (connection_creation_rate) are not supported", quota.ErrBadEntity)
		default:
			return e, nil, nil, fmt.Errorf("%w: Unhandled client quota entity type: %s", quota.ErrBadEntity, pe.Type)
		}
		switch {
		case part.Set:
			return e, nil, nil, fmt.Errorf("%w: Duplicate %s entity type", quota.ErrBadEntity, pe.Type)
		case pe.Name == nil:
			*part = quota.DefaultName
		case *pe.Name == "":
			return e, nil, nil, fmt.Errorf("%w: empty %s name", quota.ErrBadEntity, pe.Type)
		default:
			*part = quota.Named(*pe.Name)
		}
	}
	if !e.Valid() {
		return e, nil, nil, fmt.Errorf("%w: Invalid empty client quota entity", quota.ErrBadEntity)
	}
	set := quota.Values{}
	var remove []string
	for _, op := range entry.Ops {
		if op.Remove {
			if !quota.IsKey(op.Key) {
				return e, nil, nil, fmt.Errorf("%w: Invalid configuration key %s", quota.ErrUnknownKey, op.Key)
			}
			remove = append(remove, op.Key)
			delete(set, op.Key)
			continue
		}
		if err := quota.ValidateValue(op.Key, op.Value); err != nil {
			return e, nil, nil, err
		}
		set[op.Key] = op.Value
	}
	return e, set, remove, nil
}
