package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/sasl"
)

// handleAlterUserSCRAMCredentials deletes and upserts SCRAM credentials in
// /config/users (with a change notification, so every broker's cache
// follows), with Kafka 2.8's validation (ZkAdminManager), one result per
// user:
//
//   - an empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
//   - an unknown mechanism: UNSUPPORTED_SASL_MECHANISM;
//   - iterations below 4096 or above 16384: UNACCEPTABLE_CREDENTIAL;
//   - a user and mechanism named twice: DUPLICATE_RESOURCE;
//   - deleting a credential that does not exist: RESOURCE_NOT_FOUND.
//
// A user with any such problem is left unchanged; the others are altered,
// deletions first, each user in one compare-and-set.
func (b *Broker) handleAlterUserSCRAMCredentials(ctx context.Context, r *request) (reply, error) {
	req := r.msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	ctx, cancel := context.WithTimeout(ctx, scramAdminTimeout)
	defer cancel()

	var order []string // users in order of first mention
	seen := map[string]bool{}
	mention := func(u string) {
		if !seen[u] {
			seen[u] = true
			order = append(order, u)
		}
	}
	results := map[string]*kerr.Error{}
	messages := map[string]string{}
	fail := func(u string, e *kerr.Error, msg string) {
		results[u], messages[u] = e, msg
	}
	alterable := b.authorizeCluster(r, acl.OpAlter)
	for _, d := range req.Deletions {
		mention(d.Name)
		if !alterable {
			fail(d.Name, errClusterAuth, errClusterAuth.Message)
		} else if d.Name == "" {
			fail(d.Name, kerr.UnacceptableCredential, usernameMustNotBeEmpty)
		} else if _, ok := sasl.ScramMechanismOfType(d.Mechanism); !ok {
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
	}
	for _, u := range req.Upsertions {
		mention(u.Name)
		switch _, ok := sasl.ScramMechanismOfType(u.Mechanism); {
		case !alterable:
			fail(u.Name, errClusterAuth, errClusterAuth.Message)
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential, usernameMustNotBeEmpty)
		case !ok:
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < sasl.MinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > sasl.MaxIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
		}
	}
	type pair struct {
		user string
		mech int8
	}
	pairs := map[pair]int{}
	for _, u := range req.Upsertions {
		pairs[pair{u.Name, u.Mechanism}]++
	}
	for _, d := range req.Deletions {
		pairs[pair{d.Name, d.Mechanism}]++
	}
	dups := map[string]bool{}
	for p, n := range pairs {
		if _, bad := results[p.user]; !bad && n > 1 {
			dups[p.user] = true
		}
	}
	for u := range dups {
		fail(u, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	}

	store, err := b.ScramCredentials()
	for _, user := range order {
		if _, bad := results[user]; bad {
			continue
		}
		if err != nil {
			fail(user, kerr.UnknownServerError, err.Error())
			continue
		}
		uerr := store.UpdateUser(ctx, user, func(cfg map[string]string) error {
			for _, d := range req.Deletions {
				if d.Name != user {
					continue
				}
				m, _ := sasl.ScramMechanismOfType(d.Mechanism)
				if _, ok := cfg[m.Name]; !ok {
					return sasl.ErrCredentialNotFound
				}
				delete(cfg, m.Name)
			}
			for _, u := range req.Upsertions {
				if u.Name != user {
					continue
				}
				m, _ := sasl.ScramMechanismOfType(u.Mechanism)
				cfg[m.Name] = m.CredentialFromSalted(u.Salt, u.SaltedPassword, int(u.Iterations)).String()
			}
			return nil
		})
		switch {
		case uerr == nil:
			results[user] = nil
		case errors.Is(uerr, sasl.ErrCredentialNotFound):
			fail(user, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		default:
			b.logger.Warn("altering SCRAM credentials", "user", user, "err", uerr)
			e := scramErrorCode(uerr)
			fail(user, e, e.Message)
		}
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if e := results[user]; e != nil {
			res.ErrorCode, res.ErrorMessage = e.Code, kmsg.StringPtr(messages[user])
		}
		resp.Results = append(resp.Results, res)
	}
	return kmsgReply{resp}, nil
}
