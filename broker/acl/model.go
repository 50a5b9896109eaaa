package acl

import (
	"fmt"
	"strings"
)

// ResourceType is a kind of resource ACLs protect; the values are Kafka's
// wire codes (frozen).
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
)

// ClusterName is the one name of the Cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal and host matching every one.
const Wildcard = "*"

// WildcardPrincipal is the principal an ACL names to cover every user.
const WildcardPrincipal = "User:*"

// resourceTypes lists the concrete types with their ZooKeeper directory
// names (Kafka's SecurityUtils.resourceTypeName, frozen) and wire names.
var resourceTypes = []struct {
	t        ResourceType
	dir, pub string
}{
	{ResourceTopic, "Topic", "TOPIC"},
	{ResourceGroup, "Group", "GROUP"},
	{ResourceCluster, "Cluster", "CLUSTER"},
	{ResourceTransactionalID, "TransactionalId", "TRANSACTIONAL_ID"},
	{ResourceDelegationToken, "DelegationToken", "DELEGATION_TOKEN"},
}

// ResourceTypes are the concrete resource types.
func ResourceTypes() []ResourceType {
	out := make([]ResourceType, len(resourceTypes))
	for i, r := range resourceTypes {
		out[i] = r.t
	}
	return out
}

// String is the type's camel-case name, as in ZooKeeper ("Topic").
func (t ResourceType) String() string {
	for _, r := range resourceTypes {
		if r.t == t {
			return r.dir
		}
	}
	if t == ResourceAny {
		return "Any"
	}
	return fmt.Sprintf("Unknown(%d)", int8(t))
}

// enumName is the Java enum name ("TOPIC", "TRANSACTIONAL_ID"), which the
// change notifications carry.
func (t ResourceType) enumName() string {
	for _, r := range resourceTypes {
		if r.t == t {
			return r.pub
		}
	}
	return "UNKNOWN"
}

// ParseResourceType reads a type by its camel-case or enum name, in any
// case ("Topic", "TOPIC", "transactional_id", "TransactionalId").
func ParseResourceType(s string) (ResourceType, error) {
	n := strings.ReplaceAll(strings.ToLower(s), "_", "")
	for _, r := range resourceTypes {
		if strings.ToLower(r.dir) == n {
			return r.t, nil
		}
	}
	return ResourceUnknown, fmt.Errorf("%w: resource type %q", ErrUnknownName, s)
}

// PatternType says how a binding's resource name matches; Kafka's codes
// (frozen).
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters: literal or prefixed bindings with that exact name
	PatternMatch    PatternType = 2 // filters: every binding that would apply to that name
	PatternLiteral  PatternType = 3 // the name, or every name when it is "*"
	PatternPrefixed PatternType = 4 // every name starting with it
)

func (p PatternType) String() string {
	switch p {
	case PatternAny:
		return "ANY"
	case PatternMatch:
		return "MATCH"
	case PatternLiteral:
		return "LITERAL"
	case PatternPrefixed:
		return "PREFIXED"
	}
	return "UNKNOWN"
}

// ParsePatternType reads LITERAL, PREFIXED, ANY or MATCH in any case.
func ParsePatternType(s string) (PatternType, error) {
	for _, p := range []PatternType{PatternAny, PatternMatch, PatternLiteral, PatternPrefixed} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return PatternUnknown, fmt.Errorf("%w: pattern type %q", ErrUnknownName, s)
}

// Operation is what a request does to a resource; Kafka's codes (frozen).
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

// opNames are the camel-case names stored in ZooKeeper (frozen).
var opNames = map[Operation]string{
	OpAny: "Any", OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create",
	OpDelete: "Delete", OpAlter: "Alter", OpDescribe: "Describe", OpClusterAction: "ClusterAction",
	OpDescribeConfigs: "DescribeConfigs", OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
}

func (o Operation) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Unknown(%d)", int8(o))
}

// ParseOperation reads an operation by camel-case or enum name, in any
// case ("IdempotentWrite", "IDEMPOTENT_WRITE").
func ParseOperation(s string) (Operation, error) {
	n := strings.ReplaceAll(strings.ToLower(s), "_", "")
	for o, name := range opNames {
		if strings.ToLower(name) == n {
			return o, nil
		}
	}
	return OpUnknown, fmt.Errorf("%w: operation %q", ErrUnknownName, s)
}

// Permission is Allow or Deny; Kafka's codes (frozen).
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

func (p Permission) String() string {
	switch p {
	case PermissionAny:
		return "Any"
	case Deny:
		return "Deny"
	case Allow:
		return "Allow"
	}
	return "Unknown"
}

// ParsePermission reads Allow or Deny in any case.
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(s) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	case "any":
		return PermissionAny, nil
	}
	return PermissionUnknown, fmt.Errorf("%w: permission type %q", ErrUnknownName, s)
}

// Pattern is the resource side of a binding: a type, a name and how the
// name matches.
type Pattern struct {
	Type    ResourceType
	Name    string
	Pattern PatternType
}

func (p Pattern) String() string {
	return fmt.Sprintf("%s:%s:%s", p.Type, p.Pattern, p.Name)
}

// Entry is the access side of a binding: who, from where, doing what,
// allowed or denied.
type Entry struct {
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

// Binding is one ACL.
type Binding struct {
	Pattern Pattern
	Entry   Entry
}

func (b Binding) String() string {
	return fmt.Sprintf("%s %s %s %s from %s", b.Pattern, b.Entry.Permission, b.Entry.Principal, b.Entry.Operation, b.Entry.Host)
}

// Validate checks a binding to be stored as Kafka's CreateAcls does:
// concrete type, pattern, operation and permission, a principal of the
// form Type:name, a non-empty name, and kafka-cluster for Cluster.
func (b Binding) Validate() error {
	switch {
	case b.Pattern.Type <= ResourceAny || b.Pattern.Type > ResourceDelegationToken:
		return fmt.Errorf("%w: resource type %d", ErrInvalidBinding, b.Pattern.Type)
	case b.Pattern.Pattern != PatternLiteral && b.Pattern.Pattern != PatternPrefixed:
		return fmt.Errorf("%w: pattern type %s", ErrInvalidBinding, b.Pattern.Pattern)
	case b.Entry.Operation <= OpAny || b.Entry.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: operation %d", ErrInvalidBinding, b.Entry.Operation)
	case b.Entry.Permission != Allow && b.Entry.Permission != Deny:
		return fmt.Errorf("%w: permission type %d", ErrInvalidBinding, b.Entry.Permission)
	case b.Pattern.Name == "":
		return fmt.Errorf("%w: Invalid empty resource name", ErrInvalidBinding)
	case b.Pattern.Type == ResourceCluster && b.Pattern.Name != ClusterName:
		return fmt.Errorf("%w: The only valid name for the CLUSTER resource is %s", ErrInvalidBinding, ClusterName)
	case strings.Contains(b.Pattern.Name, "/"):
		return fmt.Errorf("%w: resource name %q contains '/'", ErrInvalidBinding, b.Pattern.Name)
	case b.Entry.Host == "":
		return fmt.Errorf("%w: empty host", ErrInvalidBinding)
	}
	if t, n, ok := strings.Cut(b.Entry.Principal, ":"); !ok || t == "" || n == "" {
		return fmt.Errorf("%w: principal %q is not Type:name", ErrInvalidBinding, b.Entry.Principal)
	}
	return nil
}

// Filter selects bindings, as DescribeAcls and DeleteAcls take them: the
// Any values (and nil strings) match everything; PatternMatch matches the
// bindings that would apply to Name (literal Name, literal "*", prefixes
// of Name), PatternAny the literal and prefixed bindings of exactly Name.
type Filter struct {
	Type       ResourceType
	Name       *string
	Pattern    PatternType
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// Matches reports whether f selects b.
func (f Filter) Matches(b Binding) bool {
	if f.Type != ResourceAny && f.Type != b.Pattern.Type {
		return false
	}
	if !f.matchesPattern(b.Pattern) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Entry.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Entry.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Entry.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Entry.Permission
}

func (f Filter) matchesPattern(p Pattern) bool {
	switch f.Pattern {
	case PatternAny:
		return f.Name == nil || *f.Name == p.Name
	case PatternMatch:
		if f.Name == nil {
			return true
		}
		switch p.Pattern {
		case PatternLiteral:
			return p.Name == *f.Name || p.Name == Wildcard
		case PatternPrefixed:
			return strings.HasPrefix(*f.Name, p.Name)
		}
		return false
	default:
		return f.Pattern == p.Pattern && (f.Name == nil || *f.Name == p.Name)
	}
}

// Validate refuses filters Kafka refuses: unknown values anywhere.
func (f Filter) Validate() error {
	switch {
	case f.Type == ResourceUnknown || f.Type > ResourceDelegationToken:
		return fmt.Errorf("%w: resource type %d", ErrInvalidBinding, f.Type)
	case f.Pattern == PatternUnknown || f.Pattern > PatternPrefixed:
		return fmt.Errorf("%w: pattern type %d", ErrInvalidBinding, f.Pattern)
	case f.Operation == OpUnknown || f.Operation > OpIdempotentWrite:
		return fmt.Errorf("%w: operation %d", ErrInvalidBinding, f.Operation)
	case f.Permission == PermissionUnknown || f.Permission > Allow:
		return fmt.Errorf("%w: permission type %d", ErrInvalidBinding, f.Permission)
	}
	return nil
}
