package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/pipeline"
)

// The secured soak (Config.Secure): the secured pipeline's files
// (pipeline.SecureFiles: CA, certificates, users, passwords, ACLs) used
// by separate processes through their configuration files.
//
//	brokers     SASL_SSL (SCRAM-SHA-512) for clients, REMOTE (the mirror's,
//	            behind the link) SASL_SSL too, INTERNAL (SSL, mutual TLS)
//	            between brokers; authorizer.class.name with super.users the
//	            brokers and admin, the tiers' least-privilege ACLs and the
//	            users' SCRAM credentials written to each cluster's
//	            ZooKeeper chroot before the brokers start;
//	            zookeeper.set.acl with zookeeper.digest.auth
//	clients     each tier its own user (producer-<dc>, mirror, loader,
//	            audit; the harness admin), Kafka's client keys with the
//	            password by ${file:...}
//	HTTP        the registries and the audit service over HTTPS with basic
//	            authentication (their --config)
//	HDFS        Kerberized (MiniKdc), dfs.data.transfer.protection=privacy;
//	            the loaders with connect.hdfs.principal/keytab
type secured struct {
	files     *pipeline.SecureFiles
	digest    string            // zookeeper.digest.auth, user:password
	digestRef string            // its ${file:...}
	kerberos  map[string]string // the Kerberized HDFS's cluster.env
	http      *http.Client      // the harness's: trusts the CA, admin's credentials
}

// The Kerberized HDFS's dfs.data.transfer.protection and
// dfs.encrypt.data.transfer.cipher.suites: colinmarc/hdfs reads from
// DataNodes under privacy only with AES.
const (
	kerberosProtection   = "privacy"
	kerberosCipherSuites = "AES/CTR/NoPadding"
)

// zkBrokersUser is the brokers' ZooKeeper digest identity.
const zkBrokersUser = "tributary-broker"

// zkSensitivePaths are the nodes only the brokers' identity may read, as
// the broker keeps them with zookeeper.set.acl (Kafka's sensitive paths).
var zkSensitivePaths = []string{"/config/users", "/config/brokers"}

func (s *Soak) setupSecure(context.Context) error {
	files, err := pipeline.NewSecureFiles(s.dir, Datacenters, Topic)
	if err != nil {
		return err
	}
	var pw [18]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return err
	}
	sec := &secured{files: files, digest: zkBrokersUser + ":" + hex.EncodeToString(pw[:])}
	digestFile := filepath.Join(s.dir, pipeline.SecureDir, "zookeeper-digest")
	if err := os.WriteFile(digestFile, []byte(sec.digest), 0o600); err != nil {
		return err
	}
	sec.digestRef = "${file:" + digestFile + "}"
	tlsCfg, err := security.TLS{TruststoreType: security.StorePEM, TruststoreLocation: files.CA()}.ClientConfig("")
	if err != nil {
		return fmt.Errorf("soak: the CA: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	sec.http = &http.Client{Transport: basicAuth{user: pipeline.UserAdmin, password: files.Passwords()[pipeline.UserAdmin], next: tr}}
	s.sec = sec
	return nil
}

// basicAuth sends the user's credentials on HTTPS requests.
type basicAuth struct {
	user, password string
	next           http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		r = r.Clone(r.Context())
		r.SetBasicAuth(b.user, b.password)
	}
	return b.next.RoundTrip(r)
}

// httpClient is the harness's HTTP client.
func (s *Soak) httpClient() *http.Client {
	if s.sec == nil {
		return http.DefaultClient
	}
	return s.sec.http
}

// scheme is the registries' and audit service's URL scheme.
func (s *Soak) scheme() string {
	if s.sec == nil {
		return "http"
	}
	return "https"
}

// clientConfig is the harness's client of cluster (as admin when secured).
func (s *Soak) clientConfig(cluster string) (network.ClientConfig, error) {
	cc := network.ClientConfig{Brokers: s.bootstrap(cluster)}
	if s.sec == nil {
		return cc, nil
	}
	sec, err := s.sec.files.ClientSecurity(pipeline.UserAdmin)
	if err != nil {
		return cc, err
	}
	return cc.Secured(sec), nil
}

// secureCluster writes cluster's users' SCRAM credentials and its tiers'
// ACLs into its chroot, with the brokers' ZooKeeper identity (so that
// /config/users is theirs alone), before its brokers start.
func (s *Soak) secureCluster(ctx context.Context, cluster string) error {
	cfg := zkcoord.Config{SessionTimeout: s.t.session, DigestAuth: s.sec.digest, SetACL: true, SensitivePaths: zkSensitivePaths}
	connect := func(ctx context.Context) (coord.Session, error) { return zkcoord.Connect(ctx, s.chroot(cluster), cfg) }
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logger := s.cfg.Logger.With("cluster", cluster)
	if err := devcluster.WriteScramUsers(ctx, connect, s.sec.files.Passwords(), logger); err != nil {
		return fmt.Errorf("soak: cluster %s: SCRAM users: %w", cluster, err)
	}
	if err := devcluster.StoreACLs(ctx, connect, s.sec.files.ACLs(cluster), logger); err != nil {
		return fmt.Errorf("soak: cluster %s: ACLs: %w", cluster, err)
	}
	return s.openConsumers(ctx, cluster)
}

// openConsumers creates /consumers open to all, as Kafka keeps it under
// zookeeper.set.acl ("old consumer path is kept open as different
// consumers will write under this node"): the mirrors' ZooKeeper groups
// register there. The brokers would create it read-only to others (their
// other nodes' ACL) if they made it first.
func (s *Soak) openConsumers(ctx context.Context, cluster string) error {
	sess, err := zkcoord.Connect(ctx, s.chroot(cluster), zkcoord.Config{SessionTimeout: s.t.session})
	if err != nil {
		return fmt.Errorf("soak: cluster %s: %w", cluster, err)
	}
	defer sess.Close()
	if _, err := sess.Create(ctx, "/consumers", nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return fmt.Errorf("soak: cluster %s: creating /consumers: %w", cluster, err)
	}
	return nil
}

// Listener names of the secured brokers.
const (
	listenerClients  = "SASL_SSL"
	listenerInternal = "INTERNAL"
	listenerRemote   = "REMOTE"
)

// secureBroker makes props a secured broker's: b.addr is the SASL_SSL
// client listener, internal the INTERNAL one; a datacenter broker's
// REMOTE listener is SASL_SSL too.
func (s *Soak) secureBroker(props map[string]string, b *broker, internal string) {
	listeners := listenerClients + "://" + b.addr + "," + listenerInternal + "://" + internal
	advertised := listeners
	protocols := listenerClients + ":SASL_SSL," + listenerInternal + ":SSL"
	if b.remote != "" {
		listeners += "," + listenerRemote + "://" + b.remote
		advertised += "," + listenerRemote + "://" + b.proxied
		protocols += "," + listenerRemote + ":SASL_SSL"
	}
	f := s.sec.files
	maps.Copy(props, map[string]string{
		"listeners":                              listeners,
		"advertised.listeners":                   advertised,
		"listener.security.protocol.map":         protocols,
		"inter.broker.listener.name":             listenerInternal,
		"ssl.keystore.type":                      security.StorePEM,
		"ssl.keystore.location":                  f.BrokerKeyPair(b.cluster),
		"ssl.truststore.type":                    security.StorePEM,
		"ssl.truststore.location":                f.CA(),
		"listener.name.internal.ssl.client.auth": "required",
		"ssl.principal.mapping.rules":            pipeline.PrincipalRules,
		"sasl.enabled.mechanisms":                pipeline.SecureMechanism,
		"authorizer.class.name":                  config.AuthorizerClassName,
		"allow.everyone.if.no.acl.found":         "false",
		"super.users":                            strings.Join(pipeline.SuperUsers(b.cluster), ";"),
		"zookeeper.set.acl":                      "true",
		"zookeeper.digest.auth":                  s.sec.digestRef,
	})
}

// clientProps adds user's Kafka client keys, each with prefix, to props.
func (s *Soak) clientProps(props map[string]string, prefix, user string) {
	if s.sec == nil {
		return
	}
	for k, v := range s.sec.files.ClientProps(user) {
		props[prefix+k] = v
	}
}

// registryProps adds user's registry client keys to props.
func (s *Soak) registryProps(props map[string]string, user string) {
	if s.sec != nil {
		maps.Copy(props, s.sec.files.RegistryProps(user))
	}
}

// httpServerConfig writes the HTTPS and basic authentication --config of
// an HTTP server, with Confluent's listeners key when listen is not "";
// "" when not secured.
func (s *Soak) httpServerConfig(name, listen string) (string, error) {
	if s.sec == nil {
		return "", nil
	}
	props := s.sec.files.HTTPServerProps()
	if listen != "" {
		props["listeners"] = "https://" + listen
	}
	return s.writeProperties(name, props)
}

// clientConfigFile writes user's Kafka client properties (and registry
// client keys) for a --command-config; "" when not secured.
func (s *Soak) clientConfigFile(name, user string, registry bool) (string, error) {
	if s.sec == nil {
		return "", nil
	}
	props := map[string]string{}
	s.clientProps(props, "", user)
	if registry {
		s.registryProps(props, user)
	}
	return s.writeProperties(name, props)
}

// readKerberos reads the Kerberized HDFS's cluster.env.
func (s *Soak) readKerberos() error {
	f, err := os.Open(filepath.Join(s.hdfsDir, "cluster.env"))
	if err != nil {
		return fmt.Errorf("soak: the Kerberized HDFS: %w", err)
	}
	defer f.Close()
	kv, err := properties.Read(f)
	if err != nil {
		return fmt.Errorf("soak: the Kerberized HDFS's cluster.env: %w", err)
	}
	for _, k := range []string{"HDFS_ADDR", "HDFS_NAMENODE_PRINCIPAL", "KRB5_CONFIG", "KRB5_CLIENT_PRINCIPAL", "KRB5_CLIENT_KEYTAB"} {
		if kv[k] == "" {
			return fmt.Errorf("soak: the Kerberized HDFS's cluster.env has no %s", k)
		}
	}
	s.sec.kerberos = kv
	s.hdfs = kv["HDFS_ADDR"]
	return nil
}

// hdfsProps are the loaders' HDFS keys (kafka-connect-hdfs's) of the
// Kerberized HDFS; none when not secured.
func (s *Soak) hdfsProps(props map[string]string) {
	if s.sec == nil {
		return
	}
	kv := s.sec.kerberos
	maps.Copy(props, map[string]string{
		"hdfs.authentication.kerberos":            "true",
		"connect.hdfs.principal":                  kv["KRB5_CLIENT_PRINCIPAL"],
		"connect.hdfs.keytab":                     kv["KRB5_CLIENT_KEYTAB"],
		"krb5.conf":                               kv["KRB5_CONFIG"],
		"hdfs.namenode.principal":                 kv["HDFS_NAMENODE_PRINCIPAL"],
		"dfs.data.transfer.protection":            kerberosProtection,
		"dfs.encrypt.data.transfer.cipher.suites": kerberosCipherSuites,
	})
}

// openOutput opens the loaders' output as the harness reads it back.
func (s *Soak) openOutput(ctx context.Context) (filesys.FS, string, error) {
	if s.sec == nil {
		return filesys.Open(ctx, s.outputURI())
	}
	kv := s.sec.kerberos
	return filesys.OpenWith(ctx, s.outputURI(), filesys.HDFSOptions{
		Kerberos: &filesys.Kerberos{Principal: kv["KRB5_CLIENT_PRINCIPAL"], Keytab: kv["KRB5_CLIENT_KEYTAB"],
			Krb5Conf: kv["KRB5_CONFIG"], NameNodePrincipal: kv["HDFS_NAMENODE_PRINCIPAL"]},
		DataTransferProtection: kerberosProtection, CipherSuites: kerberosCipherSuites,
	})
}

// verifySecured proves, once everything is up, that the parts are
// secured and not only configured so: an anonymous ZooKeeper session can
// neither read a SCRAM credential nor write under the brokers' nodes, a
// Kafka client with TLS but no SASL login is refused, and the registry
// and the audit service answer 401 without credentials.
func (s *Soak) verifySecured(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, c := range s.clusters() {
		sess, err := zkcoord.Connect(ctx, s.chroot(c), zkcoord.Config{SessionTimeout: s.t.session})
		if err != nil {
			return fmt.Errorf("soak: cluster %s: %w", c, err)
		}
		creds := "/config/users/" + pipeline.UserAdmin
		_, _, readErr := sess.Get(ctx, creds)
		probe := "/brokers/soak-anonymous-probe"
		_, writeErr := sess.Create(ctx, probe, nil, coord.Persistent)
		if writeErr == nil {
			_ = sess.Delete(ctx, probe, -1)
		}
		sess.Close()
		switch {
		case readErr == nil:
			return fmt.Errorf("soak: cluster %s: an anonymous ZooKeeper session read %s (zookeeper.set.acl)", c, creds)
		case writeErr == nil:
			return fmt.Errorf("soak: cluster %s: an anonymous ZooKeeper session created %s (zookeeper.set.acl)", c, probe)
		}
	}
	tlsOnly, err := network.SecurityFromProperties(properties.New(map[string]string{
		"security.protocol": "SSL", "ssl.truststore.type": security.StorePEM, "ssl.truststore.location": s.sec.files.CA(),
	}), "")
	if err != nil {
		return err
	}
	for _, c := range s.clusters() {
		cl, err := network.NewClient(network.ClientConfig{Brokers: s.bootstrap(c)}.Secured(tlsOnly))
		if err != nil {
			return err
		}
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		_, err = kadm.NewClient(cl).ListTopics(rctx)
		rcancel()
		cl.Close()
		if err == nil {
			return fmt.Errorf("soak: cluster %s: a client without a SASL login listed the topics", c)
		}
	}
	anonymous := &http.Client{Transport: s.sec.http.Transport.(basicAuth).next}
	for _, url := range []string{s.registryURL + "/subjects", s.auditURL + "/api/topics"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := anonymous.Do(req)
		if err != nil {
			return fmt.Errorf("soak: %s: %w", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("soak: %s without credentials: %s, want 401 Unauthorized", url, resp.Status)
		}
	}
	return nil
}
