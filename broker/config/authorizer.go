package config

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/internal/properties"
)

// AuthorizerClassName is our authorizer's authorizer.class.name; Kafka's
// ZooKeeper authorizers' names are accepted for it, so that a Kafka
// server.properties works unchanged.
const AuthorizerClassName = "tributary.broker.acl.Authorizer"

// authorizerAliases are the class names taken as ours.
var authorizerAliases = []string{
	AuthorizerClassName,
	"kafka.security.authorizer.AclAuthorizer",
	"kafka.security.auth.SimpleAclAuthorizer",
}

// Authorizer is the broker's authorization keys.
type Authorizer struct {
	// Enabled is authorizer.class.name naming our authorizer (or Kafka's
	// AclAuthorizer); empty, the default, authorizes everything.
	Enabled bool
	// SuperUsers is super.users: semicolon-separated principals allowed
	// everything. The brokers' own principal on the inter-broker listener
	// must be one (or hold ClusterAction on the cluster, Read/Describe on
	// the topics they replicate...), or replication stops.
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

// readAuthorizer fills c.Authorizer from authorizer.class.name,
// super.users and allow.everyone.if.no.acl.found.
func readAuthorizer(c *Config, p *properties.Props) {
	if v, ok := p.Lookup("authorizer.class.name"); ok {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case isAuthorizerAlias(v):
			c.Authorizer.Enabled = true
		default:
			p.Reject("authorizer.class.name", fmt.Errorf("unknown authorizer %q (known: %s)", v, strings.Join(authorizerAliases, ", ")))
		}
	}
	c.Authorizer.SuperUsers = acl.ParseSuperUsers(p.String("super.users"))
	c.Authorizer.AllowEveryoneIfNoACL = p.Bool("allow.everyone.if.no.acl.found", false)
}

func isAuthorizerAlias(v string) bool {
	for _, a := range authorizerAliases {
		if v == a {
			return true
		}
	}
	return false
}
