package network

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// HTTPConfig is the security of one HTTP server, as read from properties:
// TLS and basic authentication. The zero value is plain, anonymous HTTP.
type HTTPConfig struct {
	// TLS serves HTTPS. HTTPConfigFromProperties sets it when a keystore
	// is given; the registry sets it from listeners=https://.
	TLS bool
	// SSL is the ssl.* keys (keystore, truststore, versions, suites).
	SSL security.TLS
	// ClientAuth is ssl.client.authentication.
	ClientAuth ClientAuth
	// Auth is authentication.* and authorization.roles.*.
	Auth AuthConfig
}

// HTTPConfigFromProperties reads prefix+ the ssl.* keys of security.TLS,
// ssl.client.authentication (NONE, REQUESTED, REQUIRED; Confluent's older
// boolean ssl.client.auth=true is REQUIRED), authentication.method,
// authentication.realm, authentication.roles, authentication.users.file
// and authorization.roles.<role>=read|write|admin. Problems are recorded
// in p.
func HTTPConfigFromProperties(p *properties.Props, prefix string) HTTPConfig {
	c := HTTPConfig{SSL: security.TLSFromProperties(p, prefix)}
	c.TLS = c.SSL.HasKeyPair()
	key := prefix + "ssl.client.authentication"
	if v, ok := p.Lookup(key); ok {
		ca, err := ParseClientAuth(v)
		if err != nil {
			p.Reject(key, err)
		}
		c.ClientAuth = ca
	} else if p.Bool(prefix+"ssl.client.auth", false) {
		c.ClientAuth = ClientAuthRequired
	}
	c.Auth = AuthConfig{
		Method:    p.String(prefix + "authentication.method"),
		Realm:     p.String(prefix + "authentication.realm"),
		Roles:     p.List(prefix + "authentication.roles"),
		UsersFile: p.String(prefix + "authentication.users.file"),
	}
	if m := c.Auth.Method; m != "" && !strings.EqualFold(m, "NONE") && !strings.EqualFold(m, "BASIC") {
		p.Reject(prefix+"authentication.method", errors.New("want BASIC or NONE"))
	}
	grants := prefix + "authorization.roles."
	for _, k := range p.Keys() {
		role, ok := strings.CutPrefix(k, grants)
		if !ok || role == "" {
			continue
		}
		level, err := ParsePermission(p.String(k))
		if err != nil {
			p.Reject(k, err)
			continue
		}
		if c.Auth.Grants == nil {
			c.Auth.Grants = map[string]Permission{}
		}
		c.Auth.Grants[role] = level
	}
	return c
}

// Validate checks the rules between keys that need no file read.
func (c HTTPConfig) Validate() error {
	var errs []error
	if c.TLS && !c.SSL.HasKeyPair() {
		errs = append(errs, fmt.Errorf("%w: HTTPS needs ssl.keystore.location", security.ErrBadTLS))
	}
	if !c.TLS && c.ClientAuth != ClientAuthNone {
		errs = append(errs, fmt.Errorf("%w: ssl.client.authentication=%s needs HTTPS", security.ErrBadTLS, c.ClientAuth))
	}
	if c.Auth.Enabled() && c.Auth.UsersFile == "" {
		errs = append(errs, fmt.Errorf("%w: authentication.method=%s needs authentication.users.file", ErrBadAuth, c.Auth.Method))
	}
	return errors.Join(errs...)
}

// Load reads the files c names (keystore, truststore, users file).
func (c HTTPConfig) Load() (*HTTPSecurity, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &HTTPSecurity{}
	if c.TLS {
		cfg, err := ServerTLS(c.SSL, c.ClientAuth)
		if err != nil {
			return nil, err
		}
		s.TLSConfig = cfg
	}
	auth, err := NewBasicAuth(c.Auth)
	if err != nil {
		return nil, err
	}
	s.Auth = auth
	return s, nil
}

// HTTPSecurity is a loaded HTTPConfig. A nil *HTTPSecurity is plain,
// anonymous HTTP.
type HTTPSecurity struct {
	TLSConfig *tls.Config // nil: plain HTTP
	Auth      *BasicAuth  // nil: anonymous
}

// Scheme is "https" or "http".
func (s *HTTPSecurity) Scheme() string {
	if s != nil && s.TLSConfig != nil {
		return "https"
	}
	return "http"
}

// Handler is h behind s's authentication (h itself without one).
func (s *HTTPSecurity) Handler(h http.Handler, need NeedFunc) http.Handler {
	if s == nil || s.Auth == nil {
		return h
	}
	return s.Auth.Wrap(h, need)
}

// StartSecureHTTP is StartHTTP with s's TLS and authentication, need
// saying what each request needs (nil: Read).
func StartSecureHTTP(ctx context.Context, addr string, h http.Handler, s *HTTPSecurity, need NeedFunc) (*HTTPServer, error) {
	ln, err := ListenHTTP(ctx, addr)
	if err != nil {
		return nil, err
	}
	return ServeHTTP(ln, h, s, need), nil
}

// ServeHTTP serves h on the bound ln in the background with s's TLS and
// authentication, until Close or Shutdown.
func ServeHTTP(ln net.Listener, h http.Handler, s *HTTPSecurity, need NeedFunc) *HTTPServer {
	srv := &HTTPServer{srv: NewHTTPServer(s.Handler(h, need)), ln: ln, done: make(chan struct{})}
	var tlsCfg *tls.Config
	if s != nil && s.TLSConfig != nil {
		tlsCfg = s.TLSConfig.Clone()
	}
	go func() {
		defer close(srv.done)
		var err error
		if tlsCfg != nil {
			srv.srv.TLSConfig = tlsCfg
			err = srv.srv.ServeTLS(ln, "", "")
		} else {
			err = srv.srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			srv.err = err
		}
	}()
	return srv
}

// MetricsConfig is how a daemon serves /metrics (and pprof): the keys of
// HTTPConfigFromProperties under "metrics." (metrics.ssl.keystore.location,
// metrics.authentication.method, ...) and metrics.pprof.enable.
type MetricsConfig struct {
	HTTP HTTPConfig
	// Pprof mounts /debug/pprof/ (which needs Admin when authentication is
	// on). nil: only when the address is a loopback one, since profiles
	// and the command line are for the operator.
	Pprof *bool
}

// MetricsConfigFromProperties reads prefix+"metrics." keys (see
// MetricsConfig); problems are recorded in p.
func MetricsConfigFromProperties(p *properties.Props, prefix string) MetricsConfig {
	c := MetricsConfig{HTTP: HTTPConfigFromProperties(p, prefix+"metrics.")}
	if _, ok := p.Lookup(prefix + "metrics.pprof.enable"); ok {
		b := p.Bool(prefix+"metrics.pprof.enable", false)
		c.Pprof = &b
	}
	return c
}

// PprofOn reports whether pprof is served on addr.
func (c MetricsConfig) PprofOn(addr string) bool {
	if c.Pprof != nil {
		return *c.Pprof
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeMetricsWith serves g on addr/metrics as c says: TLS and
// authentication (/metrics needs Read, /debug/pprof/ Admin), and pprof
// when PprofOn.
func ServeMetricsWith(ctx context.Context, addr string, g prometheus.Gatherer, c MetricsConfig) (*HTTPServer, error) {
	sec, err := c.HTTP.Load()
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := MetricsHandler(g)
	if c.PprofOn(addr) {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return StartSecureHTTP(ctx, addr, mux, sec, metricsNeed)
}

func metricsNeed(r *http.Request) Permission {
	if strings.HasPrefix(r.URL.Path, "/debug/pprof") {
		return Admin
	}
	return Read
}
