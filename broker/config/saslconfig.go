package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// DefaultSASLHandshakeTimeout is sasl.handshake.timeout.ms's default.
const DefaultSASLHandshakeTimeout = 10 * time.Second

// SASL is the SASL side of the broker's configuration.
type SASL struct {
	// Listeners is, by upper-case listener name, the SASL settings of each
	// SASL_* listener (sasl.enabled.mechanisms, sasl.plain.users.file,
	// connections.max.reauth.ms, each also as
	// listener.name.<listener>.<key>; broker/sasl.FromProperties). A
	// SASL listener missing here has broker/sasl's defaults.
	Listeners map[string]sasl.Config
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol: the
	// mechanism the replica fetchers log in with on a SASL inter-broker
	// listener. Kafka's default, GSSAPI, is not offered; the default is
	// the first mechanism enabled on the inter-broker listener.
	InterBrokerMechanism string
	// InterBroker is the broker's own credentials on the inter-broker
	// listener, from
	// listener.name.<inter>.<mechanism, lower case>.sasl.jaas.config (a
	// PlainLoginModule or ScramLoginModule with username and password; a
	// ${file:...} or ${env:...} reference is expanded). Kafka's PLAIN
	// server JAAS also lists user_<name>="password" entries: they are
	// ignored here, the PLAIN users are sasl.plain.users.file's.
	InterBroker security.SASL
	// HandshakeTimeout is sasl.handshake.timeout.ms (Tributary's): a
	// connection to a SASL listener that has not authenticated this long
	// after being accepted (after its TLS handshake) is closed. Default
	// DefaultSASLHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// ZooKeeperAuth is how the broker authenticates to ZooKeeper and protects
// its nodes there.
type ZooKeeperAuth struct {
	// SetACL is zookeeper.set.acl: nodes the broker creates get ACLs; the
	// broker's identity may do anything, others may only read, and the
	// credentials under /config/users only the broker's identity sees
	// (Kafka's ZkData.sensitivePath). Requires Digest.
	SetACL bool
	// Digest is zookeeper.digest.auth (Tributary's), "user:password", the
	// identity of the broker's ZooKeeper sessions (ZooKeeper's digest
	// scheme; Kafka uses SASL from a JAAS Client section for the same).
	// Every broker of a cluster must have the same. May be a ${file:...}
	// or ${env:...} reference.
	Digest string
}

// ZooKeeperSensitivePaths are the nodes only the brokers may read when
// zookeeper.set.acl is on: the SCRAM credentials and the brokers' dynamic
// configuration, as Kafka's.
var ZooKeeperSensitivePaths = []string{"/config/users", "/config/brokers"}

// SASLFor returns the SASL settings of listener name.
func (c Config) SASLFor(name string) sasl.Config { return c.SASL.Listeners[name] }

// interBrokerMechanism is the inter-broker mechanism of a SASL
// inter-broker listener: the key's, else the listener's first enabled.
func (c Config) InterBrokerMechanism(inter string) string {
	if m := strings.ToUpper(strings.TrimSpace(c.SASL.InterBrokerMechanism)); m != "" {
		return m
	}
	mechs := c.SASLFor(inter).Mechanisms
	if len(mechs) == 0 {
		return sasl.ScramSHA256
	}
	return mechs[0]
}

// jaasKey is where the broker's own credentials for mechanism on listener
// are: listener.name.<listener>.<mechanism>.sasl.jaas.config, lower case.
func jaasKey(listener, mechanism string) string {
	return security.ListenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// readSASL fills c.SASL and c.ZooKeeperAuth. Like readListenerTLS it runs
// after the listener keys are set; unparseable listeners are Validate's to
// report.
func readSASL(c *Config, p *properties.Props) {
	if v, ok := p.Lookup("sasl.handshake.timeout.ms"); ok {
		if err := setPositiveDuration(&c.SASL.HandshakeTimeout, v); err != nil {
			p.Reject("sasl.handshake.timeout.ms", err)
		}
	}
	c.SASL.InterBrokerMechanism = p.String("sasl.mechanism.inter.broker.protocol")
	c.ZooKeeperAuth.SetACL = p.Bool("zookeeper.set.acl", false)
	if v, ok := p.Lookup("zookeeper.digest.auth"); ok {
		d, err := security.ExpandSecrets(v)
		if err != nil {
			p.Reject("zookeeper.digest.auth", err)
		}
		c.ZooKeeperAuth.Digest = d
	}
	protocols, err := parseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return
	}
	bound, err := parseListenerList("listeners", c.WithDefaults().Listeners, protocols, false)
	if err != nil {
		return
	}
	plan, _ := c.WithDefaults().ListenerPlan()
	for _, l := range bound {
		if !l.Protocol.SASL() {
			continue
		}
		if c.SASL.Listeners == nil {
			c.SASL.Listeners = map[string]sasl.Config{}
		}
		lc := sasl.FromProperties(p, l.Name)
		for i, m := range lc.Mechanisms {
			lc.Mechanisms[i] = strings.ToUpper(m)
		}
		c.SASL.Listeners[l.Name] = lc
		mechs := lc.Mechanisms
		if len(mechs) == 0 {
			mechs = []string{sasl.ScramSHA256, sasl.ScramSHA512}
		}
		for _, m := range mechs {
			key := jaasKey(l.Name, m)
			v, ok := p.Lookup(key)
			if !ok || plan == nil || plan.InterBroker != l.Name || m != c.InterBrokerMechanism(l.Name) {
				continue // only the inter-broker client's credentials are used
			}
			v, err := security.ExpandSecrets(v)
			if err == nil {
				c.SASL.InterBroker, err = security.SASLFromJAAS(m, v)
			}
			if err != nil {
				p.Reject(key, err)
			}
		}
	}
}

// validateSASL checks the SASL keys against the listeners: every SASL
// listener's settings, and, for a SASL inter-broker listener, a mechanism
// it enables and the broker's credentials for it.
func (c Config) validateSASL() error {
	if c.SASL.HandshakeTimeout < 0 {
		return fmt.Errorf("%w: sasl.handshake.timeout.ms: must be positive", ErrInvalidConfig)
	}
	if c.ZooKeeperAuth.SetACL && c.ZooKeeperAuth.Digest == "" {
		return fmt.Errorf("%w: zookeeper.set.acl=true needs the brokers' ZooKeeper identity in zookeeper.digest.auth", ErrInvalidConfig)
	}
	if d := c.ZooKeeperAuth.Digest; d != "" {
		if u, _, ok := strings.Cut(d, ":"); !ok || u == "" {
			return fmt.Errorf("%w: zookeeper.digest.auth: must be user:password", ErrInvalidConfig)
		}
	}
	plan, err := c.ListenerPlan()
	if err != nil {
		return err
	}
	for _, l := range plan.Bound {
		if !l.Protocol.SASL() {
			continue
		}
		if err := c.SASLFor(l.Name).Validate(); err != nil {
			return fmt.Errorf("%w: listener %s: %w", ErrInvalidConfig, l.Name, err)
		}
		if l.Name != plan.InterBroker {
			continue
		}
		m := c.InterBrokerMechanism(l.Name)
		enabled := c.SASLFor(l.Name).Mechanisms
		if len(enabled) == 0 {
			enabled = []string{sasl.ScramSHA256, sasl.ScramSHA512}
		}
		if !slices.Contains(enabled, m) {
			return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol: %s is not enabled on the inter-broker listener %s (%s)",
				ErrInvalidConfig, m, l.Name, strings.Join(enabled, ","))
		}
		if c.SASL.InterBroker.Username == "" {
			return fmt.Errorf("%w: %s: the inter-broker listener %s is %s and the broker has no credentials for %s",
				ErrInvalidConfig, jaasKey(l.Name, m), l.Name, l.Protocol, m)
		}
	}
	return nil
}

// SASLHandshakeTimeout is how long a SASL connection may stay
// unauthenticated.
func (c Config) SASLHandshakeTimeout() time.Duration {
	if c.SASL.HandshakeTimeout > 0 {
		return c.SASL.HandshakeTimeout
	}
	return DefaultSASLHandshakeTimeout
}
