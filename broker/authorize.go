package broker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/coord"
)

// Authorization (see doc.go): with authorizer.class.name set, every
// request is checked by broker/acl's Authorizer, whose cache follows the
// ACLs in the coordination service; without it, b.authz is nil and every
// check below is one nil test.

// authorization is the broker's authorizer and its store, with the
// denials metric.
type authorization struct {
	authz  *acl.Authorizer
	store  *acl.Store
	denied *prometheus.CounterVec
}

// newAuthorization registers the denials metric and makes the authorizer
// (its store starts with startAuthorizer); nil when authorization is off.
func newAuthorization(cfg config.Authorizer, reg prometheus.Registerer) (*authorization, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	denied := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tributary", Subsystem: "broker", Name: "authorization_failures_total",
		Help: "Requests (or parts of requests: a topic, a group) refused by the authorizer, by operation and resource type.",
	}, []string{"operation", "resource_type"})
	if err := reg.Register(denied); err != nil {
		return nil, fmt.Errorf("broker: registering metrics: %w", err)
	}
	return &authorization{
		authz:  acl.New(acl.Config{SuperUsers: cfg.SuperUsers, AllowEveryoneIfNoACL: cfg.AllowEveryoneIfNoACL}),
		denied: denied,
	}, nil
}

// aclSyncTimeout bounds the wait for the first load of the ACLs at start.
const aclSyncTimeout = time.Minute

// startAuthorizer starts the ACL store and waits for its first load, so
// that the first requests are decided on the stored ACLs, not on an empty
// cache. It runs after the broker joined its coordination service.
func (b *Broker) startAuthorizer(ctx context.Context) error {
	if b.authz == nil {
		return nil
	}
	b.authz.store = acl.NewStore(b.shutdownCtx, func(ctx context.Context) (coord.Session, error) {
		return b.connect(ctx)
	}, b.authz.authz, b.logger.With("component", "acl"))
	go func() {
		<-b.done
		_ = b.authz.store.Close()
	}()
	ctx, cancel := context.WithTimeout(ctx, aclSyncTimeout)
	defer cancel()
	select {
	case <-b.authz.store.Synced():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker: loading the ACLs (authorizer.class.name): %w", ctx.Err())
	}
}

// Authorizer returns the broker's authorizer, nil when
// authorizer.class.name is not set; for tests and tools.
func (b *Broker) Authorizer() *acl.Authorizer {
	if b.authz == nil {
		return nil
	}
	return b.authz.authz
}

// requestHost is the client address ACL hosts are matched against.
func requestHost(r *request) string {
	if r == nil || r.conn == nil {
		return ""
	}
	return r.conn.host
}

// requestPrincipal is r's principal (Anonymous without a connection).
func requestPrincipal(r *request) string {
	if r == nil || r.conn == nil {
		return (&connection{}).Principal()
	}
	return r.conn.Principal()
}

// authorize reports whether r's principal may do op on the resource (t,
// name); a refusal is counted and logged, rate-limited.
func (b *Broker) authorize(r *request, op acl.Operation, t acl.ResourceType, name string) bool {
	if b.authz == nil {
		return true
	}
	principal := requestPrincipal(r)
	if b.authz.authz.Authorize(principal, requestHost(r), op, t, name) {
		return true
	}
	b.deny(r, principal, op, t, name)
	return false
}

// authorizeQuiet is authorize without the denial's log and metric, for
// checks that have a fallback (Create on the cluster, then on the topic)
// or that only filter what is shown.
func (b *Broker) authorizeQuiet(r *request, op acl.Operation, t acl.ResourceType, name string) bool {
	return b.authz == nil || b.authz.authz.Authorize(requestPrincipal(r), requestHost(r), op, t, name)
}

// authorizeCluster checks op on the cluster resource.
func (b *Broker) authorizeCluster(r *request, op acl.Operation) bool {
	return b.authorize(r, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizeTopic checks op on a topic.
func (b *Broker) authorizeTopic(r *request, op acl.Operation, topic string) bool {
	return b.authorize(r, op, acl.ResourceTopic, topic)
}

// authorizeGroup checks op on a group.
func (b *Broker) authorizeGroup(r *request, op acl.Operation, group string) bool {
	return b.authorize(r, op, acl.ResourceGroup, group)
}

// topicAuthorizer memoizes one request's decisions per topic, so a
// request naming a topic's partitions separately decides (and logs) once.
type topicAuthorizer struct {
	b    *Broker
	r    *request
	op   acl.Operation
	seen map[string]bool
}

func (b *Broker) topicAuthorizer(r *request, op acl.Operation) *topicAuthorizer {
	return &topicAuthorizer{b: b, r: r, op: op}
}

// allowed decides topic once per request.
func (t *topicAuthorizer) allowed(topic string) bool {
	if t.b.authz == nil {
		return true
	}
	if ok, done := t.seen[topic]; done {
		return ok
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	ok := t.b.authorizeTopic(t.r, t.op, topic)
	t.seen[topic] = ok
	return ok
}

// authorizeAnyTopicWrite is InitProducerId's fallback: Write on any
// topic; its refusal is logged as IdempotentWrite on the cluster.
func (b *Broker) authorizeAnyTopicWrite(r *request) bool {
	principal := requestPrincipal(r)
	if b.authz.authz.AuthorizeAny(principal, requestHost(r), acl.OpWrite, acl.ResourceTopic) {
		return true
	}
	b.deny(r, principal, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName)
	return false
}

// configAuthError checks op (DescribeConfigs, AlterConfigs) on a config
// resource: a topic, or the cluster for broker and broker-logger configs;
// nil when allowed or when the type is not one we know (the handler
// refuses it).
func (b *Broker) configAuthError(r *request, op acl.Operation, typ kmsg.ConfigResourceType, name string) *kerr.Error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorizeTopic(r, op, name) {
			return errTopicAuth
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.authorizeCluster(r, op) {
			return errClusterAuth
		}
	}
	return nil
}

// deny counts and logs a refusal, at most one line per second for each
// principal and operation.
func (b *Broker) deny(r *request, principal string, op acl.Operation, t acl.ResourceType, name string) {
	b.authz.denied.WithLabelValues(op.String(), t.String()).Inc()
	addr := ""
	if r != nil && r.conn != nil {
		addr = r.conn.RemoteAddr().String()
	}
	b.res.logs.log(slog.LevelInfo, "acl-denied-"+principal+"-"+op.String(), "authorization failed",
		"principal", principal, "operation", op.String(), "resource_type", t.String(), "resource", name,
		"remote", addr, "api", apiName(r))
}

// apiName names r's API for logs.
func apiName(r *request) string {
	if r == nil {
		return ""
	}
	return kmsg.NameForKey(r.key)
}

// Kafka's authorization errors, which the handlers set.
var (
	errTopicAuth   = kerr.TopicAuthorizationFailed
	errGroupAuth   = kerr.GroupAuthorizationFailed
	errClusterAuth = kerr.ClusterAuthorizationFailed
	errTxnAuth     = kerr.TransactionalIDAuthorizationFailed
)
