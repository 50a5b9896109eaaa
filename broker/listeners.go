package broker

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/cluster"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/security"
)

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
	advertised config.Listener
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
func advertise(spec config.Listener, plan *config.ListenerPlan, bound *net.TCPAddr) config.Listener {
	if a, ok := plan.Advertised[spec.Name]; ok {
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
	return config.Listener{Name: spec.Name, Protocol: spec.Protocol, Host: host, Port: bound.Port}
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
			return l.advertised.Host, int32(l.advertised.Port), true
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
		endpoints = append(endpoints, l.advertised.Endpoint())
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
		tc, err := b.cfg.TLSFor(l.name).ClientConfig("")
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
		cfg.SASL.Mechanism = b.cfg.InterBrokerMechanism(l.name)
	}
	return network.NewClient(cfg)
}
