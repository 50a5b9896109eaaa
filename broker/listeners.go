package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// listenerSpec is one entry of listeners or advertised.listeners:
// NAME://host:port, the name upper-cased as Kafka normalises it.
type listenerSpec struct {
	name     string
	protocol security.Protocol
	host     string
	port     int
}

func (s listenerSpec) hostPort() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// endpoint is the form /brokers/ids/<id> carries: NAME://host:port.
func (s listenerSpec) endpoint() string { return s.name + "://" + s.hostPort() }

// listenerPlan is the parsed listeners, advertised.listeners,
// listener.security.protocol.map and inter-broker keys of a Config.
type listenerPlan struct {
	bound      []listenerSpec
	advertised map[string]listenerSpec // by name; absent: from the bound address
	// interBroker names the listener other brokers are reached on.
	interBroker string
}

// defaultProtocolMap is Kafka's listener.security.protocol.map default:
// each protocol's name maps to itself.
func defaultProtocolMap() map[string]security.Protocol {
	return map[string]security.Protocol{
		"PLAINTEXT": security.Plaintext, "SSL": security.SSL,
		"SASL_PLAINTEXT": security.SASLPlaintext, "SASL_SSL": security.SASLSSL,
	}
}

// parseProtocolMap reads listener.security.protocol.map, NAME:PROTOCOL,...
// ("" is Kafka's default).
func parseProtocolMap(v string) (map[string]security.Protocol, error) {
	if strings.TrimSpace(v) == "" {
		return defaultProtocolMap(), nil
	}
	out := map[string]security.Protocol{}
	for _, item := range properties.SplitList(v) {
		name, proto, ok := strings.Cut(item, ":")
		name = strings.ToUpper(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not LISTENER:PROTOCOL", item)
		}
		p, err := security.ParseProtocol(proto)
		if err != nil || strings.TrimSpace(proto) == "" {
			return nil, fmt.Errorf("listener %s: %w", name, errors.Join(err, security.ErrUnknownProtocol))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s is mapped twice", name)
		}
		out[name] = p
	}
	return out, nil
}

// parseListenerList reads key's value, a comma-separated list of
// NAME://host:port (a bare host:port is PLAINTEXT, as before named
// listeners). Names must be distinct and mapped to a protocol; with
// distinctPorts, non-zero ports too.
func parseListenerList(key, v string, protocols map[string]security.Protocol, distinctPorts bool) ([]listenerSpec, error) {
	var out []listenerSpec
	names := map[string]bool{}
	ports := map[int]string{}
	for _, item := range properties.SplitList(v) {
		name, addr := "PLAINTEXT", item
		if n, a, ok := strings.Cut(item, "://"); ok {
			name, addr = strings.ToUpper(strings.TrimSpace(n)), a
		}
		if name == "" {
			return nil, fmt.Errorf("%w: %s: %q has no listener name", ErrInvalidConfig, key, item)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %q: %v", ErrInvalidConfig, key, item, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("%w: %s: %q: bad port %q", ErrInvalidConfig, key, item, port)
		}
		proto, ok := protocols[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s: listener %s has no security protocol in listener.security.protocol.map", ErrInvalidConfig, key, name)
		}
		if names[name] {
			return nil, fmt.Errorf("%w: %s: each listener must have a different name; %s is given twice", ErrInvalidConfig, key, name)
		}
		names[name] = true
		if prev, dup := ports[p]; dup && distinctPorts && p != 0 {
			return nil, fmt.Errorf("%w: %s: each listener must have a different port; %s and %s both use %d", ErrInvalidConfig, key, prev, name, p)
		}
		ports[p] = name
		out = append(out, listenerSpec{name: name, protocol: proto, host: host, port: p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no listener given", ErrInvalidConfig, key)
	}
	return out, nil
}

// listenerPlan parses and cross-checks the listener keys (after defaults).
func (c Config) listenerPlan() (*listenerPlan, error) {
	protocols, err := parseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return nil, fmt.Errorf("%w: listener.security.protocol.map: %v", ErrInvalidConfig, err)
	}
	plan := &listenerPlan{advertised: map[string]listenerSpec{}}
	if plan.bound, err = parseListenerList("listeners", c.Listeners, protocols, true); err != nil {
		return nil, err
	}
	boundNames := map[string]bool{}
	for _, l := range plan.bound {
		boundNames[l.name] = true
	}
	if strings.TrimSpace(c.AdvertisedListeners) != "" {
		adv, err := parseListenerList("advertised.listeners", c.AdvertisedListeners, protocols, false)
		if err != nil {
			return nil, err
		}
		for _, a := range adv {
			if !boundNames[a.name] {
				return nil, fmt.Errorf("%w: advertised.listeners: listener %s is not in listeners", ErrInvalidConfig, a.name)
			}
			if a.port == 0 {
				return nil, fmt.Errorf("%w: advertised.listeners: port 0 cannot be advertised (%s)", ErrInvalidConfig, a.name)
			}
			plan.advertised[a.name] = a
		}
	}
	switch name, proto := strings.TrimSpace(c.InterBrokerListenerName), strings.TrimSpace(c.SecurityInterBrokerProtocol); {
	case name != "" && proto != "":
		return nil, fmt.Errorf("%w: inter.broker.listener.name and security.inter.broker.protocol: only one may be set", ErrInvalidConfig)
	case name != "":
		plan.interBroker = strings.ToUpper(name)
		if !boundNames[plan.interBroker] {
			return nil, fmt.Errorf("%w: inter.broker.listener.name: %s is not a listener in listeners", ErrInvalidConfig, plan.interBroker)
		}
	default:
		p, err := security.ParseProtocol(proto) // "" is PLAINTEXT, Kafka's default
		if err != nil {
			return nil, fmt.Errorf("%w: security.inter.broker.protocol: %w", ErrInvalidConfig, err)
		}
		plan.interBroker = string(p)
		if !boundNames[plan.interBroker] {
			return nil, fmt.Errorf("%w: security.inter.broker.protocol: no listener named %s in listeners (set inter.broker.listener.name)", ErrInvalidConfig, p)
		}
	}
	for _, l := range plan.bound {
		if !l.protocol.TLS() {
			continue
		}
		if !c.tlsFor(l.name).HasKeyPair() {
			return nil, fmt.Errorf("%w: %sssl.keystore.location (or ssl.keystore.location): listener %s is %s and has no key pair",
				ErrInvalidConfig, security.ListenerPrefix(l.name), l.name, l.protocol)
		}
		if _, err := security.NewServer(c.tlsFor(l.name), nil); err != nil {
			return nil, fmt.Errorf("%w: listener %s: %w", ErrInvalidConfig, l.name, err)
		}
	}
	return plan, nil
}

// tlsFor returns the TLS settings of listener name: its own, else the
// plain ssl.* ones.
func (c Config) tlsFor(name string) security.ServerTLS {
	if s, ok := c.ListenerTLS[name]; ok {
		return s
	}
	return c.TLS
}

// readListenerTLS fills c.TLS from the plain ssl.* keys and c.ListenerTLS
// for every listener of c.Listeners (the listener.name.<l>.ssl.* keys over
// the plain ones). It runs after the plain setters, so that the listener
// names are known; an unparseable listeners value is Validate's to report.
func readListenerTLS(c *Config, p *properties.Props) {
	c.TLS = security.ServerTLSFromProperties(p, "")
	protocols, err := parseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return
	}
	bound, err := parseListenerList("listeners", c.withDefaults().Listeners, protocols, false)
	if err != nil {
		return
	}
	for _, l := range bound {
		if c.ListenerTLS == nil {
			c.ListenerTLS = map[string]security.ServerTLS{}
		}
		c.ListenerTLS[l.name] = security.ServerTLSFromProperties(p, l.name)
	}
}

// listener is one bound listener of a started broker.
type listener struct {
	name     string
	protocol security.Protocol
	ln       net.Listener
	// tls serves the handshakes of SSL and SASL_SSL listeners; nil otherwise.
	tls *security.Server
	// sasl authenticates the clients of SASL_* listeners; nil otherwise.
	sasl *sasl.Authenticator
	// advertised is what clients arriving elsewhere are told.
	advertised listenerSpec
	// dynamicTLS are the listener.name.<l>.ssl.* dynamic broker configs
	// last handed to tls (dynconfig.go); reconciler-owned.
	dynamicTLS map[string]string
}

// Name is the listener's name (PLAINTEXT, SSL, INTERNAL, ...).
func (l *listener) Name() string { return l.name }

// Protocol is the listener's security protocol: SASL_* listeners require
// authentication before other requests.
func (l *listener) Protocol() security.Protocol { return l.protocol }

// advertise returns what l advertises: advertised.listeners' entry, or the
// bound address (a wildcard one as the host name, as Kafka does).
func advertise(spec listenerSpec, plan *listenerPlan, bound *net.TCPAddr) listenerSpec {
	if a, ok := plan.advertised[spec.name]; ok {
		return a
	}
	host := bound.IP.String()
	if bound.IP.IsUnspecified() {
		// Kafka advertises the canonical host name for a wildcard
		// listener; the loopback address is what works on one machine.
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	return listenerSpec{name: spec.name, protocol: spec.protocol, host: host, port: bound.Port}
}

// requestListener names the listener r arrived on: the endpoints a
// response names are that listener's (Kafka's rule), so that a client on
// the SSL port is sent to SSL ports. A request without a connection (built
// in-process) counts as arriving on the first listener.
func (b *Broker) requestListener(r *request) string {
	if r != nil && r.conn != nil && r.conn.listener != nil {
		return r.conn.listener.name
	}
	if len(b.listeners) > 0 {
		return b.listeners[0].name
	}
	return ""
}

// endpointOf returns where broker sb is reached on the named listener;
// false if it has no such listener (it is then left out of responses, as
// Kafka does). This broker answers with its own listener's advertised
// address; a registration without endpoints (written by hand) with its
// host and port.
func (b *Broker) endpointOf(sb cluster.Broker, name string) (host string, port int32, ok bool) {
	if sb.ID == b.cfg.BrokerID {
		if l := b.listenerNamed(name); l != nil {
			return l.advertised.host, int32(l.advertised.port), true
		}
	}
	if len(sb.Endpoints) == 0 {
		return sb.Host, sb.Port, sb.Host != ""
	}
	return sb.Endpoint(name)
}

// registration is what this broker writes into /brokers/ids/<id>: every
// listener's advertised endpoint and the listeners' protocols.
func (b *Broker) registration() (endpoints []string, protocols map[string]string) {
	protocols = map[string]string{}
	for _, l := range b.listeners {
		endpoints = append(endpoints, l.advertised.endpoint())
		protocols[l.name] = string(l.protocol)
	}
	return endpoints, protocols
}

// interBrokerClient connects to another broker's inter-broker listener at
// addr as Kafka's brokers do: over TLS when the listener's protocol says
// so, logged in with SASL when it says so, with the listener's own settings (listener.name.<inter>.ssl.* over
// ssl.*: the truststore checks the other broker, the keystore is this
// broker's client certificate for ssl.client.auth=required). The files
// are read for every new client, so a reloaded certificate is used by the
// fetchers' next connections.
func (b *Broker) interBrokerClient(addr, clientID string) (*kgo.Client, error) {
	cfg := network.ClientConfig{
		Brokers:                []string{addr},
		ClientID:               clientID,
		RequestTimeoutOverhead: 10 * time.Second,
	}
	l := b.listenerNamed(b.interBroker)
	if l != nil && l.protocol.TLS() {
		tc, err := b.cfg.tlsFor(l.name).ClientConfig("")
		if err != nil {
			return nil, fmt.Errorf("inter-broker listener %s: %w", l.name, err)
		}
		cfg.TLS = tc
	}
	if l != nil && l.protocol.SASL() {
		// sasl.mechanism.inter.broker.protocol with the broker's own
		// credentials (listener.name.<inter>.<mechanism>.sasl.jaas.config).
		cfg.Protocol = l.protocol
		cfg.SASL = b.cfg.SASL.InterBroker
		cfg.SASL.Mechanism = b.cfg.interBrokerMechanism(l.name)
	}
	return network.NewClient(cfg)
}
