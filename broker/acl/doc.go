// Package acl is the broker's authorizer: Kafka's ACL model, the
// decisions of Kafka's AclAuthorizer, and the store that keeps every
// broker's cache equal to the ACLs in ZooKeeper, in Kafka 2.8's layout, so
// that `kafka-acls --authorizer-properties zookeeper.connect=...` and our
// brokers read and write the same ACLs.
//
// # Model
//
// A Binding is a Pattern (resource type Topic, Group, Cluster,
// TransactionalId or DelegationToken; a name; pattern type LITERAL, where
// the name "*" matches every resource of the type, or PREFIXED) and an
// Entry (principal "User:name" or "User:*", host an IP address or "*",
// operation, Allow or Deny). The numeric values of ResourceType,
// PatternType, Operation and Permission are Kafka's wire codes (frozen).
// A Filter selects bindings as DescribeAcls and DeleteAcls do: ANY values
// match everything, PatternAny the literal and prefixed bindings of one
// name, PatternMatch every binding that applies to a name.
//
// # Decisions
//
// Authorizer.Authorize follows AclAuthorizer: super.users are allowed
// everything; the ACLs that apply to a resource are its literal ones, the
// literal "*" ones of its type and the prefixed ones whose prefix starts
// its name; with none, allow.everyone.if.no.acl.found decides (default
// deny); otherwise a Deny matching the principal (or User:*), host (or *)
// and operation (or All) refuses, and else an Allow of the operation, All
// or an operation implying it (Read, Write, Delete, Alter imply Describe;
// AlterConfigs implies DescribeConfigs) permits. AuthorizeAny is Kafka's
// authorizeByResourceType (InitProducerId's Write on any topic).
// Decisions take a read lock and allocate nothing: literal patterns are a
// map lookup, prefixed ones one lookup per distinct prefix length of the
// type.
//
// # ZooKeeper layout (frozen: Kafka 2.8's)
//
//	/kafka-acl/<Type>/<name>                   literal ACLs
//	/kafka-acl-extended/prefixed/<Type>/<name> prefixed ACLs
//	  {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
//	   "operation":"Read","host":"*"}]}
//	/kafka-acl-changes/acl_changes_<seq>          "TOPIC:<name>" (Java enum name)
//	/kafka-acl-extended-changes/acl_changes_<seq> {"version":1,"resourceType":"TOPIC",
//	                                                "name":"<name>","patternType":"PREFIXED"}
//
// Type is Topic, Group, Cluster, TransactionalId or DelegationToken; the
// Cluster resource is named kafka-cluster. A pattern whose last entry is
// removed loses its node, as in Kafka. Writes are compare-and-set on the
// node's version, retried when another writer (a broker, or Kafka's tool)
// got there first, and each is followed by its change notification.
// Notifications are not purged (Kafka purges them after 15 minutes).
//
// # Recovery and concurrency
//
// A Store loads every ACL when its session starts (after arming the
// watches on both change paths, so no change falls between), then re-reads
// each pattern a notification names; a lost session is replaced and the
// cache reloaded whole. Malformed nodes are skipped with a warning (their
// ACLs do not apply). Authorizer and Store are safe for concurrent use.
package acl
