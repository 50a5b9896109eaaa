package pipeline

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// The secured pipeline (Config.Secure). Every Kafka-protocol connection is
// TLS and every client authenticates:
//
//	dc1, dc2    SASL_SSL (SCRAM-SHA-512) for clients; INTERNAL (SSL, mutual) between brokers
//	analytics   SASL_SSL for the loader, the audit service and tools;
//	            SSL with required client certificates for the mirror;
//	            INTERNAL between brokers
//	registry, audit dashboard   HTTPS with basic authentication
//
// Start generates, into <Dir>/secure, a CA, the brokers' and the HTTP
// servers' certificates, a client certificate per user, a random password
// per user (<user>.password, mode 0600) stored as SCRAM credentials in each
// cluster's coordination service, a users file of bcrypt hashes for the
// HTTP servers, and a Kafka client properties file per user whose
// sasl.jaas.config reads the password with ${file:...} (the loader's job
// configuration and `--command-config` use them as they are). Everything is
// generated again at every Start. Every cluster runs the authorizer with the
// tiers' least-privilege ACLs (acls.go).
const (
	// SecureDir is the directory under Dir holding the generated files.
	SecureDir = "secure"
	// SecureMechanism is the SASL mechanism every client uses.
	SecureMechanism = security.MechanismScramSHA512
	// listenerClients is the SASL_SSL client listener of every cluster.
	listenerClients = "SASL_SSL"
	// listenerMirror is analytics' SSL listener, mutual TLS, for the mirror.
	listenerMirror = "SSL"
	// listenerInternal is every cluster's inter-broker listener.
	listenerInternal = "INTERNAL"
	// UserAdmin is the user of ensureTopics and of the operator's tools.
	UserAdmin = "admin"
)

// clientsProtocol is the protocol of the listener for clients.
const clientsProtocol = security.SASLSSL

// The HTTP roles of the users file, and what each may do.
var httpGrants = map[string]network.Permission{
	"producer": network.Write, // registers the page-view schema
	"reader":   network.Read,  // the loader's schema lookups
	"admin":    network.Admin,
}

// secureSetup is the generated material of a secured pipeline.
type secureSetup struct {
	dir       string
	ca        string            // the CA certificate, every client's truststore
	brokerPEM map[string]string // cluster -> its brokers' key pair
	httpPEM   string            // the registry's and audit service's key pair
	usersFile string            // the HTTP users (bcrypt)
	passwords map[string]string // user -> password
	registry  *network.HTTPSecurity
	dashboard *network.HTTPSecurity
	acls      map[string][]acl.Binding // cluster -> its tiers' ACLs (acls.go)
}

// secureUsers lists the users of the pipeline: a producer per datacenter,
// the mirror, the loader, the audit service and the admin.
func (c Config) secureUsers() []string {
	var users []string
	for _, dc := range c.Datacenters {
		users = append(users, producerUser(dc))
	}
	return append(users, "mirror", "loader", "audit", UserAdmin)
}

func producerUser(dc string) string { return "producer-" + dc }

// newSecureSetup writes the certificates, passwords and files of cfg's
// secured pipeline into <cfg.Dir>/secure.
func newSecureSetup(cfg Config) (*secureSetup, error) {
	s := &secureSetup{
		dir:       filepath.Join(cfg.Dir, SecureDir),
		brokerPEM: map[string]string{},
		passwords: map[string]string{},
		acls:      map[string][]acl.Binding{},
	}
	for _, name := range cfg.clusters() {
		s.acls[name] = cfg.tierACLs(name)
	}
	if strings.ContainsAny(s.dir, ":}") {
		// ${file:PATH} references cannot name such a path.
		return nil, fmt.Errorf("%w: secure: dir %q may not contain ':' or '}'", ErrInvalidConfig, s.dir)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("secure: %w", err)
	}
	ca, err := pki.NewCA("tributary pipeline CA")
	if err != nil {
		return nil, fmt.Errorf("secure: %w", err)
	}
	s.ca = s.path("ca.pem")
	if err := ca.WritePEM(s.ca); err != nil {
		return nil, fmt.Errorf("secure: %w", err)
	}
	hosts := []string{cfg.Host}
	if cfg.Host != "localhost" {
		hosts = append(hosts, "localhost")
	}
	issue := func(file string, o pki.Options) error {
		leaf, err := ca.Issue(o)
		if err == nil {
			err = leaf.WritePEM(s.path(file))
		}
		if err != nil {
			return fmt.Errorf("secure: %s: %w", file, err)
		}
		return nil
	}
	for _, name := range cfg.clusters() {
		// Server and client: the brokers' certificate is also their client
		// certificate on the other brokers' INTERNAL listener.
		file := brokerUser(name) + ".pem"
		if err := issue(file, pki.Options{CommonName: brokerUser(name), Organization: "tributary", Hosts: hosts}); err != nil {
			return nil, err
		}
		s.brokerPEM[name] = s.path(file)
	}
	s.httpPEM = s.path("http.pem")
	if err := issue("http.pem", pki.Options{CommonName: "http", Organization: "tributary", Hosts: hosts, Server: true}); err != nil {
		return nil, err
	}
	var users strings.Builder
	users.WriteString("# Written by tributary pipeline --secure: the registry's and audit dashboard's users (bcrypt).\n")
	for _, u := range cfg.secureUsers() {
		pw, err := randomPassword()
		if err != nil {
			return nil, err
		}
		s.passwords[u] = pw
		if err := os.WriteFile(s.passwordFile(u), []byte(pw+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("secure: %w", err)
		}
		if err := issue(u+".pem", pki.Options{CommonName: u, Organization: "tributary", Client: true}); err != nil {
			return nil, err
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("secure: %w", err)
		}
		fmt.Fprintf(&users, "%s: %s,%s\n", u, hash, httpRole(u))
		if err := writeProperties(s.path(u+".properties"), "user "+u+"'s Kafka client security (--command-config)", s.clientProps(u, clientsProtocol)); err != nil {
			return nil, fmt.Errorf("secure: %w", err)
		}
	}
	s.usersFile = s.path("http-users.properties")
	if err := os.WriteFile(s.usersFile, []byte(users.String()), 0o600); err != nil {
		return nil, fmt.Errorf("secure: %w", err)
	}
	if s.registry, err = s.httpSecurity(); err != nil {
		return nil, err
	}
	if s.dashboard, err = s.httpSecurity(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *secureSetup) path(name string) string { return filepath.Join(s.dir, name) }

func (s *secureSetup) passwordFile(user string) string { return s.path(user + ".password") }

// httpRole is user's role in the HTTP users file.
func httpRole(user string) string {
	switch {
	case strings.HasPrefix(user, "producer-"):
		return "producer"
	case user == UserAdmin:
		return "admin"
	}
	return "reader"
}

// randomPassword is 24 random bytes, base64url: no character that a JAAS
// quoted string or a properties file would need escaped.
func randomPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secure: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (s *secureSetup) httpSecurity() (*network.HTTPSecurity, error) {
	hc := network.HTTPConfig{
		TLS:  true,
		SSL:  security.TLS{KeystoreType: security.StorePEM, KeystoreLocation: s.httpPEM},
		Auth: network.AuthConfig{Method: "BASIC", UsersFile: s.usersFile, Grants: maps.Clone(httpGrants)},
	}
	sec, err := hc.Load()
	if err != nil {
		return nil, fmt.Errorf("secure: https: %w", err)
	}
	return sec, nil
}

// clientProps are the Kafka client keys of user on a listener of protocol:
// the CA as truststore; SCRAM with the password read from its file on
// SASL_SSL; the user's certificate on SSL (mutual TLS).
func (s *secureSetup) clientProps(user string, protocol security.Protocol) map[string]string {
	props := map[string]string{
		"security.protocol":       string(protocol),
		"ssl.truststore.type":     security.StorePEM,
		"ssl.truststore.location": s.ca,
	}
	if protocol.SASL() {
		props["sasl.mechanism"] = SecureMechanism
		props["sasl.jaas.config"] = fmt.Sprintf(`%s required username="%s" password="${file:%s}";`,
			security.ScramLoginModule, user, s.passwordFile(user))
	} else {
		props["ssl.keystore.type"] = security.StorePEM
		props["ssl.keystore.location"] = s.path(user + ".pem")
	}
	return props
}

// clientSecurity is clientProps read as every tier reads its file.
func (s *secureSetup) clientSecurity(user string, protocol security.Protocol) (network.Security, error) {
	sec, err := network.SecurityFromProperties(properties.New(s.clientProps(user, protocol)), "")
	if err != nil {
		return network.Security{}, fmt.Errorf("secure: user %s: %w", user, err)
	}
	return sec, nil
}

// registryClient is user's schema registry client settings (the URL is
// the caller's).
func (s *secureSetup) registryClient(user string) serde.ClientConfig {
	return serde.ClientConfig{
		Username: user, Password: s.passwords[user],
		TLS: security.TLS{TruststoreType: security.StorePEM, TruststoreLocation: s.ca},
	}
}

// registryProps are the registry client keys of user, for a properties
// file: the password stays in its file.
func (s *secureSetup) registryProps(user string) map[string]string {
	return map[string]string{
		"basic.auth.user.info":                    user + ":${file:" + s.passwordFile(user) + "}",
		"schema.registry.ssl.truststore.type":     security.StorePEM,
		"schema.registry.ssl.truststore.location": s.ca,
	}
}

// clusterConfig secures the devcluster configuration of cluster name.
func (s *secureSetup) clusterConfig(dc *devcluster.Config, name string) {
	dc.TLS = security.TLS{
		KeystoreType: security.StorePEM, KeystoreLocation: s.brokerPEM[name],
		TruststoreType: security.StorePEM, TruststoreLocation: s.ca,
	}
	dc.Listeners = []devcluster.Listener{{Name: listenerClients, Protocol: clientsProtocol}}
	if name == AnalyticsCluster {
		dc.Listeners = append(dc.Listeners, devcluster.Listener{Name: listenerMirror, Protocol: security.SSL, ClientAuth: security.ClientAuthRequired})
	}
	dc.Listeners = append(dc.Listeners, devcluster.Listener{Name: listenerInternal, Protocol: security.SSL, ClientAuth: security.ClientAuthRequired})
	dc.InterBrokerListener = listenerInternal
	dc.PrincipalRules = principalRules
	dc.ScramUsers = s.passwords
	dc.Authorizer = authorizerConfig(name)
	dc.ACLs = s.acls[name]
	if name == AnalyticsCluster {
		dc.RegistrySecurity = s.registry
	}
}
