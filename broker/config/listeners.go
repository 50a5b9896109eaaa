package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port, the name upper-cased as Kafka normalises it.
type Listener struct {
	Name     string
	Protocol security.Protocol
	Host     string
	Port     int
}

// HostPort is the listener's address.
func (s Listener) HostPort() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Endpoint is the form /brokers/ids/<id> carries: NAME://host:port.
func (s Listener) Endpoint() string { return s.Name + "://" + s.HostPort() }

// ListenerPlan is the parsed listeners, advertised.listeners,
// listener.security.protocol.map and inter-broker keys of a Config.
type ListenerPlan struct {
	Bound      []Listener
	Advertised map[string]Listener // by name; absent: from the bound address
	// InterBroker names the listener other brokers are reached on.
	InterBroker string
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
func parseListenerList(key, v string, protocols map[string]security.Protocol, distinctPorts bool) ([]Listener, error) {
	var out []Listener
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
		out = append(out, Listener{Name: name, Protocol: proto, Host: host, Port: p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no listener given", ErrInvalidConfig, key)
	}
	return out, nil
}

// ListenerPlan parses and cross-checks the listener keys (after defaults).
func (c Config) ListenerPlan() (*ListenerPlan, error) {
	protocols, err := parseProtocolMap(c.ListenerSecurityProtocolMap)
	if err != nil {
		return nil, fmt.Errorf("%w: listener.security.protocol.map: %v", ErrInvalidConfig, err)
	}
	plan := &ListenerPlan{Advertised: map[string]Listener{}}
	if plan.Bound, err = parseListenerList("listeners", c.Listeners, protocols, true); err != nil {
		return nil, err
	}
	boundNames := map[string]bool{}
	for _, l := range plan.Bound {
		boundNames[l.Name] = true
	}
	if strings.TrimSpace(c.AdvertisedListeners) != "" {
		adv, err := parseListenerList("advertised.listeners", c.AdvertisedListeners, protocols, false)
		if err != nil {
			return nil, err
		}
		for _, a := range adv {
			if !boundNames[a.Name] {
				return nil, fmt.Errorf("%w: advertised.listeners: listener %s is not in listeners", ErrInvalidConfig, a.Name)
			}
			if a.Port == 0 {
				return nil, fmt.Errorf("%w: advertised.listeners: port 0 cannot be advertised (%s)", ErrInvalidConfig, a.Name)
			}
			plan.Advertised[a.Name] = a
		}
	}
	switch name, proto := strings.TrimSpace(c.InterBrokerListenerName), strings.TrimSpace(c.SecurityInterBrokerProtocol); {
	case name != "" && proto != "":
		return nil, fmt.Errorf("%w: inter.broker.listener.name and security.inter.broker.protocol: only one may be set", ErrInvalidConfig)
	case name != "":
		plan.InterBroker = strings.ToUpper(name)
		if !boundNames[plan.InterBroker] {
			return nil, fmt.Errorf("%w: inter.broker.listener.name: %s is not a listener in listeners", ErrInvalidConfig, plan.InterBroker)
		}
	default:
		p, err := security.ParseProtocol(proto) // "" is PLAINTEXT, Kafka's default
		if err != nil {
			return nil, fmt.Errorf("%w: security.inter.broker.protocol: %w", ErrInvalidConfig, err)
		}
		plan.InterBroker = string(p)
		if !boundNames[plan.InterBroker] {
			return nil, fmt.Errorf("%w: security.inter.broker.protocol: no listener named %s in listeners (set inter.broker.listener.name)", ErrInvalidConfig, p)
		}
	}
	for _, l := range plan.Bound {
		if !l.Protocol.TLS() {
			continue
		}
		if !c.TLSFor(l.Name).HasKeyPair() {
			return nil, fmt.Errorf("%w: %sssl.keystore.location (or ssl.keystore.location): listener %s is %s and has no key pair",
				ErrInvalidConfig, security.ListenerPrefix(l.Name), l.Name, l.Protocol)
		}
		if _, err := security.NewServer(c.TLSFor(l.Name), nil); err != nil {
			return nil, fmt.Errorf("%w: listener %s: %w", ErrInvalidConfig, l.Name, err)
		}
	}
	return plan, nil
}

// TLSFor returns the TLS settings of listener name: its own, else the
// plain ssl.* ones.
func (c Config) TLSFor(name string) security.ServerTLS {
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
	bound, err := parseListenerList("listeners", c.WithDefaults().Listeners, protocols, false)
	if err != nil {
		return
	}
	for _, l := range bound {
		if c.ListenerTLS == nil {
			c.ListenerTLS = map[string]security.ServerTLS{}
		}
		c.ListenerTLS[l.Name] = security.ServerTLSFromProperties(p, l.Name)
	}
}
