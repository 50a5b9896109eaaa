package pipeline

import (
	"maps"
	"slices"
	"strings"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
)

// SecureFiles is the generated material of the secured pipeline (secure.go)
// for a deployment whose parts are separate processes reading it from
// files (package pipeline/soak): the same CA, certificates, users,
// passwords and least-privilege ACLs (acls.go) as the in-process secured
// pipeline's.
type SecureFiles struct {
	s   *secureSetup
	cfg Config
}

// NewSecureFiles writes, into <dir>/secure, the secured pipeline's files
// for datacenters (default DefaultDatacenters) and topic (default
// DefaultTopic), certificates valid for 127.0.0.1 and localhost.
func NewSecureFiles(dir string, datacenters []string, topic string) (*SecureFiles, error) {
	cfg := Config{Dir: dir, Datacenters: datacenters, Topic: topic}.withDefaults()
	s, err := newSecureSetup(cfg)
	if err != nil {
		return nil, err
	}
	return &SecureFiles{s: s, cfg: cfg}, nil
}

// Users are the pipeline's users: a producer per datacenter
// (ProducerUser), mirror, loader, audit and UserAdmin.
func (f *SecureFiles) Users() []string { return f.cfg.secureUsers() }

// ProducerUser is datacenter dc's producer.
func ProducerUser(dc string) string { return producerUser(dc) }

// BrokerUser is the brokers' principal name in cluster (their
// certificate's CN), a super user there.
func BrokerUser(cluster string) string { return brokerUser(cluster) }

// PrincipalRules is ssl.principal.mapping.rules: a certificate's CN is
// the user.
const PrincipalRules = principalRules

// CA is the CA certificate (PEM), every client's truststore.
func (f *SecureFiles) CA() string { return f.s.ca }

// BrokerKeyPair is cluster's brokers' key pair (PEM), server and client.
func (f *SecureFiles) BrokerKeyPair(cluster string) string { return f.s.brokerPEM[cluster] }

// HTTPKeyPair is the registry's and audit service's key pair (PEM).
func (f *SecureFiles) HTTPKeyPair() string { return f.s.httpPEM }

// PasswordFile is user's password file (mode 0600).
func (f *SecureFiles) PasswordFile(user string) string { return f.s.passwordFile(user) }

// Passwords are the users' passwords by user.
func (f *SecureFiles) Passwords() map[string]string { return maps.Clone(f.s.passwords) }

// ClientProps are user's SASL_SSL (SCRAM-SHA-512) Kafka client keys, the
// password read with ${file:...}.
func (f *SecureFiles) ClientProps(user string) map[string]string {
	return f.s.clientProps(user, clientsProtocol)
}

// ClientSecurity is ClientProps as a client reads them.
func (f *SecureFiles) ClientSecurity(user string) (network.Security, error) {
	return f.s.clientSecurity(user, clientsProtocol)
}

// RegistryProps are user's schema registry client keys
// (basic.auth.user.info with ${file:...}, schema.registry.ssl.*).
func (f *SecureFiles) RegistryProps(user string) map[string]string { return f.s.registryProps(user) }

// RegistryClient is user's registry client settings (URL not set).
func (f *SecureFiles) RegistryClient(user string) serde.ClientConfig { return f.s.registryClient(user) }

// HTTPServerProps are the HTTPS and basic authentication keys of the
// registry's and audit service's --config (network.HTTPConfigFromProperties):
// the HTTP key pair, the users file and the roles' grants.
func (f *SecureFiles) HTTPServerProps() map[string]string {
	props := map[string]string{
		"ssl.keystore.type":         security.StorePEM,
		"ssl.keystore.location":     f.s.httpPEM,
		"authentication.method":     "BASIC",
		"authentication.users.file": f.s.usersFile,
		"authentication.realm":      "tributary",
		"authentication.roles":      strings.Join(slices.Sorted(maps.Keys(httpGrants)), ","),
	}
	for role, p := range httpGrants {
		props["authorization.roles."+role] = p.String()
	}
	return props
}

// ACLs are cluster's least-privilege ACLs (acls.go).
func (f *SecureFiles) ACLs(cluster string) []acl.Binding { return f.s.acls[cluster] }

// SuperUsers is cluster's super.users: its brokers and the admin.
func SuperUsers(cluster string) []string { return authorizerConfig(cluster).SuperUsers }
