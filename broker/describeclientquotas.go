package broker

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/quota"
)

// Kafka's quota entity types (ClientQuotaEntity).
const (
	quotaEntityUser   = "user"
	quotaEntityClient = "client-id"
	quotaEntityIP     = "ip"
)

// handleDescribeClientQuotas lists the quotas of the entities that match
// the filter, read from the coordination service, as Kafka 2.8's
// ZkAdminManager does: each component names an entity type ("user",
// "client-id") and a match (an exact name, the default, or any); with
// strict, an entity must have no other types; without components, every
// entity matches unless strict. Needs DescribeConfigs on the cluster
// (CLUSTER_AUTHORIZATION_FAILED). A type named twice or empty is
// INVALID_REQUEST, another type UNSUPPORTED_VERSION ("ip" quotas are not
// kept: connection_creation_rate is not enforced).
func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(e *kerr.Error, msg string) (reply, error) {
		resp.ErrorCode, resp.ErrorMessage = e.Code, kmsg.StringPtr(msg)
		return kmsgReply{resp}, nil
	}
	if !b.authorizeCluster(r, acl.OpDescribeConfigs) {
		return fail(errClusterAuth, errClusterAuth.Message)
	}
	filters := map[string]kmsg.DescribeClientQuotasRequestComponent{}
	for _, c := range req.Components {
		switch {
		case c.EntityType == "":
			return fail(kerr.InvalidRequest, "Unexpected empty filter component entity type")
		case filters[c.EntityType].EntityType != "":
			return fail(kerr.InvalidRequest, "Duplicate "+c.EntityType+" filter component entity type")
		case c.EntityType != quotaEntityUser && c.EntityType != quotaEntityClient:
			return fail(kerr.UnsupportedVersion, "Custom entity type "+c.EntityType+" not supported")
		case c.MatchType == kmsg.QuotasMatchTypeExact && c.Match == nil:
			return fail(kerr.InvalidRequest, "Unexpected null match for the exact match type of "+c.EntityType)
		case c.MatchType != kmsg.QuotasMatchTypeExact && c.MatchType != kmsg.QuotasMatchTypeDefault && c.MatchType != kmsg.QuotasMatchTypeAny:
			return fail(kerr.InvalidRequest, "Unknown match type "+c.MatchType.String())
		}
		filters[c.EntityType] = c
	}
	ctx, cancel := context.WithTimeout(ctx, scramAdminTimeout)
	defer cancel()
	all, err := b.quotas.store.Read(ctx)
	if err != nil {
		e := scramErrorCode(err)
		if errors.Is(err, quota.ErrClosed) {
			e = kerr.UnknownServerError
		}
		return fail(e, err.Error())
	}
	// Empty, not null: null is the error case, and Kafka's admin client
	// reads a null list on success as a failure.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for e, values := range all {
		if !quotaEntityMatches(e, filters, req.Strict) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, part := range []struct {
			typ  string
			name quota.Name
		}{{quotaEntityUser, e.User}, {quotaEntityClient, e.Client}} {
			if !part.name.Set {
				continue
			}
			pe := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			pe.Type = part.typ
			if !part.name.Default {
				pe.Name = kmsg.StringPtr(part.name.Value)
			}
			entry.Entity = append(entry.Entity, pe)
		}
		for _, k := range quota.Keys {
			if v, ok := values[k]; ok {
				val := kmsg.NewDescribeClientQuotasResponseEntryValue()
				val.Key, val.Value = k, v
				entry.Values = append(entry.Values, val)
			}
		}
		resp.Entries = append(resp.Entries, entry)
	}
	slices.SortFunc(resp.Entries, func(a, b kmsg.DescribeClientQuotasResponseEntry) int {
		return strings.Compare(entryKey(a.Entity), entryKey(b.Entity))
	})
	return kmsgReply{resp}, nil
}

func entryKey(es []kmsg.DescribeClientQuotasResponseEntryEntity) string {
	var sb strings.Builder
	for _, e := range es {
		sb.WriteString(e.Type + "=")
		if e.Name != nil {
			sb.WriteString(*e.Name)
		}
		sb.WriteByte(';')
	}
	return sb.String()
}

// quotaEntityMatches applies a DescribeClientQuotas filter to e.
func quotaEntityMatches(e quota.Entity, filters map[string]kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	if len(filters) == 0 {
		return !strict
	}
	for _, part := range []struct {
		typ  string
		name quota.Name
	}{{quotaEntityUser, e.User}, {quotaEntityClient, e.Client}} {
		c, filtered := filters[part.typ]
		switch {
		case !filtered:
			if strict && part.name.Set {
				return false
			}
		case !part.name.Set:
			return false
		case c.MatchType == kmsg.QuotasMatchTypeDefault:
			if !part.name.Default {
				return false
			}
		case c.MatchType == kmsg.QuotasMatchTypeExact:
			if part.name.Default || part.name.Value != *c.Match {
				return false
			}
		}
	}
	return true
}
