package zkcoord

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/coord"
)

// Default timeouts, Kafka's defaults for the same settings.
const (
	// DefaultSessionTimeout is zookeeper.session.timeout.ms's default.
	DefaultSessionTimeout = 18 * time.Second
)

// Config configures a Session. The zero value means defaults.
type Config struct {
	// SessionTimeout is the session timeout asked of the server
	// (zookeeper.session.timeout.ms); the server may clamp it to its
	// [2, 20] tick range. Default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ConnectionTimeout bounds how long Connect waits for a session
	// (zookeeper.connection.timeout.ms). Default: SessionTimeout.
	ConnectionTimeout time.Duration
	// Logger receives session state changes at info level and the
	// ZooKeeper client's own messages at debug level; nil discards them.
	Logger *slog.Logger
	// DigestAuth is "user:password": the session authenticates with
	// ZooKeeper's digest scheme (addauth digest) on every connection, so
	// it can read and write nodes whose ACLs name that identity.
	DigestAuth string
	// SetACL creates every node with ACLs, as Kafka's zookeeper.set.acl:
	// all permissions for the DigestAuth identity, and read for anyone,
	// except for nodes at or under one of SensitivePaths (relative to the
	// chroot), which only that identity may touch. Requires DigestAuth.
	// Nodes that already exist keep their ACLs.
	SetACL         bool
	SensitivePaths []string
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.SessionTimeout < 0 {
		errs = append(errs, fmt.Errorf("zkcoord: negative session timeout %v", c.SessionTimeout))
	} else if c.SessionTimeout > 0 && c.SessionTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("zkcoord: session timeout %v is below a millisecond", c.SessionTimeout))
	}
	if c.DigestAuth != "" {
		if u, _, ok := strings.Cut(c.DigestAuth, ":"); !ok || u == "" {
			errs = append(errs, errors.New("zkcoord: digest credentials must be user:password"))
		}
	}
	if c.SetACL && c.DigestAuth == "" {
		errs = append(errs, errors.New("zkcoord: setting ACLs needs digest credentials"))
	}
	if c.ConnectionTimeout < 0 {
		errs = append(errs, fmt.Errorf("zkcoord: negative connection timeout %v", c.ConnectionTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) sessionTimeout() time.Duration {
	if c.SessionTimeout > 0 {
		return c.SessionTimeout
	}
	return DefaultSessionTimeout
}

func (c Config) connectionTimeout() time.Duration {
	if c.ConnectionTimeout > 0 {
		return c.ConnectionTimeout
	}
	return c.sessionTimeout()
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// ParseConnect splits a zookeeper.connect string into its servers and
// chroot ("" when there is none): "h1:2181,h2:2181/kafka" gives
// ["h1:2181" "h2:2181"] and "/kafka". A server without a port gets 2181.
func ParseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := coord.ValidatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("%w: %q: chroot: %w", ErrBadConnect, connect, err)
		}
	}
	for h := range strings.SplitSeq(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("%w: %q: empty server", ErrBadConnect, connect)
		}
		if !strings.Contains(h, ":") {
			h += ":2181"
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}
