package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults for the zero values of Config.
const (
	// DefaultHost is advertised when Config.Host is empty.
	DefaultHost = "127.0.0.1"
	// DefaultPort is Kafka's default listener port.
	DefaultPort = 9092
	// DefaultRetryBackoff spaces retries after a failed coordination call
	// and is the first pause between attempts to open a new session.
	DefaultRetryBackoff = 200 * time.Millisecond
	// DefaultSessionTimeout is zookeeper.session.timeout.ms's default.
	DefaultSessionTimeout = 18 * time.Second
	// StaleRegistrationSlack is added to the session timeout to bound the
	// wait for this broker's own stale registration: ZooKeeper expires
	// sessions on tick boundaries and may raise a short timeout to two
	// ticks, so the old session can outlive its nominal timeout by a few
	// seconds.
	StaleRegistrationSlack = 10 * time.Second
	// DefaultLeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds's default.
	DefaultLeaderImbalanceCheckInterval = 300 * time.Second
	// maxRetryBackoff caps the exponential pause between reconnect attempts.
	maxRetryBackoff = 5 * time.Second
)

// Config describes this broker to the cluster. The zero value is a broker
// with id 0 at 127.0.0.1:9092.
type Config struct {
	// BrokerID is broker.id; ids are unique among live brokers.
	BrokerID int32
	// Host and Port are the advertised PLAINTEXT address written to
	// /brokers/ids/<id>. Defaults DefaultHost and DefaultPort.
	Host string
	Port int32
	// Endpoints are the advertised listeners as "NAME://host:port". Default:
	// one PLAINTEXT listener at Host:Port. Given, they replace Host and
	// Port: the registration's host and port are then those of the first
	// PLAINTEXT-protocol endpoint (null and -1 without one), as Kafka's.
	Endpoints []string
	// Protocols is listener.security.protocol.map, listener name to
	// security protocol, written as the registration's
	// listener_security_protocol_map. Default: each endpoint's name is
	// its protocol.
	Protocols map[string]string
	// Rack is broker.rack; empty means none (the field is then omitted).
	Rack string
	// Logger receives membership, election and controller messages; nil
	// discards them. It is the broker's own logger, which names the broker
	// where the process runs several (a dev cluster): the member adds no
	// broker attribute of its own, or every line would carry it twice.
	Logger *slog.Logger
	// Now stamps the registration and controller nodes; default time.Now.
	Now func() time.Time
	// RetryBackoff is the pause after a failed coordination call; reconnect
	// attempts double it up to 5 s. Default DefaultRetryBackoff.
	RetryBackoff time.Duration
	// SessionTimeout is the coordination session timeout
	// (zookeeper.session.timeout.ms). A broker killed without closing its
	// session stays registered that long; restarted at once, Join waits up
	// to SessionTimeout + StaleRegistrationSlack for that registration to
	// go. Default DefaultSessionTimeout.
	SessionTimeout time.Duration

	// The fields below steer this member's work as controller; they take
	// effect while it is the elected controller.

	// UncleanLeaderElection is unclean.leader.election.enable: when no live
	// replica is in the ISR, elect the first live replica anyway (losing
	// what only the ISR had). A topic's "unclean.leader.election.enable"
	// override wins. Default false, as in Kafka.
	UncleanLeaderElection bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable: move leadership
	// back to a partition's preferred replica (the first of its assignment)
	// once that is live and in the ISR. Kafka's default is true; the zero
	// Config has it off, so the broker passes its own default.
	AutoLeaderRebalance bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds:
	// preferred-leader moves happen at most once per interval. Default
	// DefaultLeaderImbalanceCheckInterval.
	LeaderImbalanceCheckInterval time.Duration
}

// Validate checks the configuration; the error wraps ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	if c.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("broker id %d is negative", c.BrokerID))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is out of range", c.Port))
	}
	if strings.ContainsAny(c.Host, "/ ") {
		errs = append(errs, fmt.Errorf("host %q is not a host name", c.Host))
	}
	for _, ep := range c.Endpoints {
		if _, _, _, err := parseEndpoint(ep); err != nil {
			errs = append(errs, err)
		}
	}
	if c.RetryBackoff < 0 {
		errs = append(errs, fmt.Errorf("negative retry backoff %v", c.RetryBackoff))
	}
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("negative session timeout %v", c.SessionTimeout))
	}
	if c.LeaderImbalanceCheckInterval < 0 {
		errs = append(errs, fmt.Errorf("negative leader imbalance check interval %v", c.LeaderImbalanceCheckInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

func (c Config) host() string {
	if c.Host != "" {
		return c.Host
	}
	return DefaultHost
}

func (c Config) port() int32 {
	if c.Port != 0 {
		return c.Port
	}
	return DefaultPort
}

func (c Config) endpoints() []string {
	if len(c.Endpoints) > 0 {
		return c.Endpoints
	}
	return []string{"PLAINTEXT://" + net.JoinHostPort(c.host(), strconv.Itoa(int(c.port())))}
}

func (c Config) protocolMap() map[string]string {
	m := map[string]string{}
	for _, ep := range c.endpoints() {
		if name, _, _, err := parseEndpoint(ep); err == nil {
			m[name] = protocolOf(c.Protocols, name)
		}
	}
	return m
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c Config) retryBackoff() time.Duration {
	if c.RetryBackoff > 0 {
		return c.RetryBackoff
	}
	return DefaultRetryBackoff
}

func (c Config) leaderImbalanceCheckInterval() time.Duration {
	if c.LeaderImbalanceCheckInterval > 0 {
		return c.LeaderImbalanceCheckInterval
	}
	return DefaultLeaderImbalanceCheckInterval
}

// staleWait bounds the wait for a stale registration of this broker.
func (c Config) staleWait() time.Duration {
	timeout := c.SessionTimeout
	if timeout <= 0 {
		timeout = DefaultSessionTimeout
	}
	return timeout + StaleRegistrationSlack
}

// parseEndpoint splits "NAME://host:port".
func parseEndpoint(ep string) (listener, host string, port int32, err error) {
	name, addr, ok := strings.Cut(ep, "://")
	if !ok || name == "" {
		return "", "", 0, fmt.Errorf("endpoint %q is not NAME://host:port", ep)
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", 0, fmt.Errorf("endpoint %q: %w", ep, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil || n < 0 || n > 65535 {
		return "", "", 0, fmt.Errorf("endpoint %q: bad port %q", ep, p)
	}
	return name, h, int32(n), nil
}
