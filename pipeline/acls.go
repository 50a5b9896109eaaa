package pipeline

import (
	"github.com/tributary/tributary/audit"
	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
)

// Authorization of the secured pipeline. Every cluster runs the
// authorizer with allow.everyone.if.no.acl.found=false; super.users are the
// brokers' own principal (User:broker-<cluster>, their certificate's CN on
// the INTERNAL listener: replica fetches need ClusterAction and Read on
// every topic, which a super user has without ACLs) and the admin (topic
// creation, the operator's tools). Everyone else holds exactly the ACLs of
// tierACLs, stored before any tier starts; README's "The pipeline's least
// privilege" table lists the same, and TestDemoSecure proves they suffice.
//
// Principals: SCRAM users are User:<name>; certificates map to their CN
// (principalRules), so the mirror is User:mirror on dc's SASL_SSL and on
// analytics' SSL listener alike.

// principalRules maps a certificate subject "CN=x,O=tributary" to x.
const principalRules = `RULE:^CN=([^,]*),.*$/$1/,DEFAULT`

// MirrorGroup is the mirror's group.id on every source.
const MirrorGroup = "pipeline-mirror"

// brokerUser is the brokers' principal name in cluster name.
func brokerUser(name string) string { return "broker-" + name }

// authorizerConfig is cluster name's authorizer: ours, closed by default,
// with the brokers and the admin as super users.
func authorizerConfig(name string) config.Authorizer {
	return config.Authorizer{
		Enabled:    true,
		SuperUsers: []string{principal(brokerUser(name)), principal(UserAdmin)},
	}
}

func principal(user string) string { return "User:" + user }

// allowACL is user's literal Allow of op on (t, name), from any host.
func allowACL(user string, op acl.Operation, t acl.ResourceType, name string) acl.Binding {
	return acl.Binding{
		Pattern: acl.Pattern{Type: t, Name: name, Pattern: acl.PatternLiteral},
		Entry:   acl.Entry{Principal: principal(user), Host: acl.Wildcard, Operation: op, Permission: acl.Allow},
	}
}

// tierACLs are the least privilege of every tier on cluster name:
//
//	producer-<dc> (dc)   Write on the page-view topic and on __audit (Write
//	                     implies Describe, and Write on a topic is enough
//	                     for an idempotent producer's InitProducerId)
//	mirror (each dc)     Read and DescribeConfigs on the page-view topic
//	                     (the source's configs are copied to a topic it
//	                     creates); its group needs no ACL: the mirror's
//	                     consumer group and offsets live in the source's
//	                     coordination service, not in Kafka's group APIs
//	mirror (analytics)   Write, Create, Alter (grow partitions) and
//	                     DescribeConfigs (max.message.bytes) on the
//	                     page-view topic; Write on __audit (its counts)
//	loader (analytics)   Read on the page-view topic (its offsets are in
//	                     its output, no group); Write on __audit
//	audit (every one)    Read on __audit (assigned partitions, no group)
func (c Config) tierACLs(name string) []acl.Binding {
	topic, auditTopic := c.Topic, audit.DefaultTopic
	t := acl.ResourceTopic
	if name != AnalyticsCluster {
		return []acl.Binding{
			allowACL(producerUser(name), acl.OpWrite, t, topic),
			allowACL(producerUser(name), acl.OpWrite, t, auditTopic),
			allowACL("mirror", acl.OpRead, t, topic),
			allowACL("mirror", acl.OpDescribeConfigs, t, topic),
			allowACL("audit", acl.OpRead, t, auditTopic),
		}
	}
	return []acl.Binding{
		mirrorTargetWrite(topic),
		allowACL("mirror", acl.OpCreate, t, topic),
		allowACL("mirror", acl.OpAlter, t, topic),
		allowACL("mirror", acl.OpDescribeConfigs, t, topic),
		allowACL("mirror", acl.OpWrite, t, auditTopic),
		allowACL("loader", acl.OpRead, t, topic),
		allowACL("loader", acl.OpWrite, t, auditTopic),
		allowACL("audit", acl.OpRead, t, auditTopic),
	}
}

// mirrorTargetWrite is the mirror's Write on the target topic.
func mirrorTargetWrite(topic string) acl.Binding {
	return allowACL("mirror", acl.OpWrite, acl.ResourceTopic, topic)
}
