package security

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/internal/properties"
)

// ClientAuth is ssl.client.auth: whether a TLS server asks its clients for
// a certificate.
type ClientAuth int

// The values of ssl.client.auth.
const (
	ClientAuthNone      ClientAuth = iota // none (Kafka's default)
	ClientAuthRequested                   // requested: checked when given
	ClientAuthRequired                    // required: mutual TLS
)

// ParseClientAuth reads ssl.client.auth; "" is none.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none":
		return ClientAuthNone, nil
	case "requested":
		return ClientAuthRequested, nil
	case "required":
		return ClientAuthRequired, nil
	}
	return 0, fmt.Errorf("%w: ssl.client.auth %q: want none, requested or required", ErrBadTLS, s)
}

func (a ClientAuth) String() string {
	return [...]string{"none", "requested", "required"}[a]
}

func (a ClientAuth) tls() tls.ClientAuthType {
	switch a {
	case ClientAuthRequested:
		return tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		return tls.RequireAndVerifyClientCert
	}
	return tls.NoClientCert
}

// ServerTLS is the ssl.* settings of one TLS listener: its key pair (which
// is also the broker's client certificate when it connects to another
// broker's listener of the same name), the CAs its clients' certificates
// must chain to, and how clients authenticate.
type ServerTLS struct {
	TLS
	ClientAuth ClientAuth
	// PrincipalRules is ssl.principal.mapping.rules; "" is DEFAULT.
	PrincipalRules string
}

// ServerTLSKeys are the keys ServerTLSFromProperties reads, unprefixed.
var ServerTLSKeys = append(append([]string{}, TLSKeys...), "ssl.client.auth", "ssl.principal.mapping.rules")

// ListenerPrefix is Kafka's prefix for a listener's own settings:
// "listener.name.<lowercase name>.".
func ListenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// ServerTLSFromProperties reads the TLS settings of listener with Kafka's
// precedence: each listener.name.<listener>.ssl.* key over the plain ssl.*
// key of the same name. listener "" reads the plain keys only. Problems
// are recorded in p under the key actually given.
func ServerTLSFromProperties(p *properties.Props, listener string) ServerTLS {
	prefix := ""
	if listener != "" {
		prefix = ListenerPrefix(listener)
	}
	// An overlay of the effective values under their plain names, read by
	// the one ssl.* reader; its complaints are re-filed under the source key.
	merged := map[string]string{}
	source := map[string]string{}
	for _, k := range ServerTLSKeys {
		if prefix != "" {
			if v, ok := p.Lookup(prefix + k); ok {
				merged[k], source[k] = v, prefix+k
				p.Ignore(k) // overridden, but a key the listener was given
				continue
			}
		}
		if v, ok := p.Lookup(k); ok {
			merged[k], source[k] = v, k
		}
	}
	overlay := properties.New(merged)
	s := ServerTLS{TLS: TLSFromProperties(overlay, "")}
	var err error
	if s.ClientAuth, err = ParseClientAuth(overlay.String("ssl.client.auth")); err != nil {
		p.Reject(source["ssl.client.auth"], errors.New("want none, requested or required"))
	}
	s.PrincipalRules = overlay.String("ssl.principal.mapping.rules")
	if _, err := ParsePrincipalRules(s.PrincipalRules); err != nil {
		p.Reject(source["ssl.principal.mapping.rules"], err)
	}
	var perr *properties.Error
	for _, e := range unjoin(overlay.Err()) {
		if errors.As(e, &perr) {
			p.Reject(source[perr.Key], perr.Err)
		}
	}
	return s
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// DefaultReloadInterval is how often a Server checks its files for new
// certificates when Run is given no interval.
const DefaultReloadInterval = 10 * time.Second

// Server is the TLS side of one listener. Its key pair and trust are read
// at NewServer and again whenever Reload finds the files changed: a valid
// new set is used for the handshakes that follow, an invalid one is
// logged and the old set kept. Safe for concurrent use.
type Server struct {
	settings ServerTLS
	mapper   *PrincipalMapper
	log      *slog.Logger

	mu      sync.Mutex // serialises Reload
	stamp   string
	current atomic.Pointer[tls.Config]
}

// NewServer loads s, which must name a key pair. logger may be nil.
func NewServer(s ServerTLS, logger *slog.Logger) (*Server, error) {
	if !s.HasKeyPair() {
		return nil, fmt.Errorf("%w: a TLS listener needs ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)", ErrBadTLS)
	}
	mapper, err := ParsePrincipalRules(s.PrincipalRules)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := &Server{settings: s, mapper: mapper, log: logger}
	cfg, err := srv.load()
	if err != nil {
		return nil, err
	}
	srv.current.Store(cfg)
	srv.stamp = srv.fingerprint()
	return srv, nil
}

// Config is the crypto/tls configuration to serve with; every handshake
// takes the key pair and trust current at that moment.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return s.current.Load(), nil },
	}
}

// ClientAuth returns the listener's ssl.client.auth.
func (s *Server) ClientAuth() ClientAuth { return s.settings.ClientAuth }

// Principal is the Kafka principal of a completed handshake: User:<subject
// mapped by ssl.principal.mapping.rules>, or Anonymous without a client
// certificate.
func (s *Server) Principal(st tls.ConnectionState) (string, error) {
	return s.mapper.CertificatePrincipal(st.PeerCertificates)
}

// Leaf returns the certificate new handshakes present.
func (s *Server) Leaf() *tls.Certificate {
	c := s.current.Load()
	return &c.Certificates[0]
}

// Reload rereads the key pair and trust if their files changed since the
// last load. It reports whether a new set is in use; an error means the
// files changed but do not load (the old set stays).
func (s *Server) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stamp := s.fingerprint()
	if stamp == s.stamp {
		return false, nil
	}
	cfg, err := s.load()
	if err != nil {
		// Remembered so that one bad file is logged once, not every poll;
		// a later change is tried again.
		s.stamp = stamp
		return false, err
	}
	s.current.Store(cfg)
	s.stamp = stamp
	return true, nil
}

// ReconfigurableTLSKeys are the keys of a listener's TLS that an operator
// may change while the broker runs (Kafka's SslConfigs.RECONFIGURABLE_CONFIGS
// less the passwords, which Kafka keeps encrypted with
// password.encoder.secret): with the listener.name.<l>. prefix, they are
// dynamic broker configs.
var ReconfigurableTLSKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
}

// WithKey returns s with one of ReconfigurableTLSKeys set to value; false
// for any other key.
func (s ServerTLS) WithKey(key, value string) (ServerTLS, bool) {
	t := &s.TLS
	switch key {
	case "ssl.keystore.type":
		t.KeystoreType = value
	case "ssl.keystore.location":
		t.KeystoreLocation = value
	case "ssl.keystore.certificate.chain":
		t.KeystoreCertificateChain = value
	case "ssl.truststore.type":
		t.TruststoreType = value
	case "ssl.truststore.location":
		t.TruststoreLocation = value
	case "ssl.truststore.certificates":
		t.TruststoreCertificates = value
	default:
		return s, false
	}
	return s, true
}

// Update switches to the key pair and trust of next (its client auth and
// principal rules are not reconfigurable and are ignored): new handshakes
// use them at once, established connections keep theirs. If they do not
// load, the current ones stay and the error says why. Reload then watches
// next's files.
func (s *Server) Update(next ServerTLS) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.settings.TLS
	s.settings.TLS = next.TLS
	cfg, err := s.load()
	if err != nil {
		s.settings.TLS = old
		return err
	}
	s.current.Store(cfg)
	s.stamp = s.fingerprint()
	return nil
}

// Run calls Reload every interval (DefaultReloadInterval if <= 0) until
// ctx ends, logging what it finds. name labels the log lines.
func (s *Server) Run(ctx context.Context, name string, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultReloadInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch ok, err := s.Reload(); {
		case err != nil:
			s.log.Error("new TLS certificates refused; keeping the old ones", "listener", name, "err", err)
		case ok:
			leaf := s.Leaf().Leaf
			attrs := []any{"listener", name}
			if leaf != nil {
				attrs = append(attrs, "subject", leaf.Subject.String(), "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
			}
			s.log.Info("TLS certificates reloaded", attrs...)
		}
	}
}

func (s *Server) load() (*tls.Config, error) {
	cfg, err := s.settings.base()
	if err != nil {
		return nil, err
	}
	cert, err := s.settings.LoadKeyPair()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, fmt.Errorf("%w: ssl.keystore.location: no key pair", ErrBadTLS)
	}
	if cert.Leaf == nil && len(cert.Certificate) > 0 {
		// tls.X509KeyPair fills Leaf since Go 1.23; parse it otherwise, for
		// the reload log line and Leaf.
		cert.Leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	cfg.Certificates = []tls.Certificate{*cert}
	if cfg.ClientCAs, err = s.settings.LoadTrust(); err != nil {
		return nil, err
	}
	cfg.ClientAuth = s.settings.ClientAuth.tls()
	return cfg, nil
}

// fingerprint hashes the files the settings name (inline PEM does not
// change); a missing file hashes as its error, so that its return is seen.
func (s *Server) fingerprint() string {
	h := sha256.New()
	t := s.settings.TLS
	for _, path := range []string{t.KeystoreLocation, t.CertificateLocation, t.KeyLocation, t.TruststoreLocation} {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(h, "%s: %v\n", path, err)
			continue
		}
		fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
	}
	return string(h.Sum(nil))
}
