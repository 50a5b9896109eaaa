package security

import (
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/properties"
)

// serveWith runs a TLS listener on srv and reports each handshake's
// principal (or error).
func serveWith(t *testing.T, srv *Server) (string, <-chan string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	seen := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(30 * time.Second))
				if err := tc.Handshake(); err != nil {
					seen <- "error: " + err.Error()
					return
				}
				p, err := srv.Principal(tc.ConnectionState())
				if err != nil {
					p = "error: " + err.Error()
				}
				seen <- p
			}()
		}
	}()
	return ln.Addr().String(), seen
}

// serialSeen dials addr and returns the serial of the server certificate.
func serialSeen(t *testing.T, addr string, f *fixture) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: f.ca.Pool()})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestServerReload: a replaced keystore is used by the next handshakes; an
// invalid replacement is refused and the previous certificate kept.
func TestServerReload(t *testing.T) {
	f := newFixture(t)
	ks := f.path("broker.pem")
	if err := f.srv.WritePEM(ks); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerTLS{TLS: TLS{KeystoreLocation: ks}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serveWith(t, srv)
	if got, want := serialSeen(t, addr, f), f.srv.Cert.SerialNumber.String(); got != want {
		t.Fatalf("serial %s, want %s", got, want)
	}
	if changed, err := srv.Reload(); changed || err != nil {
		t.Errorf("reload of unchanged files: %v, %v", changed, err)
	}

	next, err := f.ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.WritePEM(ks + ".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ks+".new", ks); err != nil {
		t.Fatal(err)
	}
	if changed, err := srv.Reload(); !changed || err != nil {
		t.Fatalf("reload of a new keystore: %v, %v", changed, err)
	}
	if got, want := serialSeen(t, addr, f), next.Cert.SerialNumber.String(); got != want {
		t.Errorf("after reload: serial %s, want the new %s", got, want)
	}

	if err := os.WriteFile(ks, []byte("-----BEGIN PRIVATE KEY-----\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := srv.Reload(); changed || err == nil || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Errorf("reload of a garbage keystore: %v, %v; want refused naming the key", changed, err)
	}
	if got, want := serialSeen(t, addr, f), next.Cert.SerialNumber.String(); got != want {
		t.Errorf("after a refused reload: serial %s, want the kept %s", got, want)
	}
	if changed, err := srv.Reload(); changed || err != nil {
		t.Errorf("the same garbage again: %v, %v; want it reported once", changed, err)
	}
}

// TestServerClientAuth: each ssl.client.auth value, and the principal of
// a client certificate through ssl.principal.mapping.rules.
func TestServerClientAuth(t *testing.T) {
	f := newFixture(t)
	expired, err := f.ca.Issue(pki.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := f.other.Issue(pki.Options{CommonName: "stranger", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	named, err := f.ca.Issue(pki.Options{CommonName: "alice", OrganizationalUnit: "People", Organization: "acme", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	base := TLS{KeystoreType: StorePEM, KeystoreCertificateChain: string(f.srv.CertPEM), KeystoreKey: string(f.srv.KeyPEM),
		TruststoreCertificates: string(f.ca.CertPEM)}
	dialAs := func(addr string, leaf *pki.Leaf, seen <-chan string) string {
		t.Helper()
		cfg := &tls.Config{RootCAs: f.ca.Pool()}
		if leaf != nil {
			// Sent even when the server's CAs do not include its issuer
			// (crypto/tls would otherwise withhold it).
			cert := leaf.TLSCertificate()
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the first read.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Read(make([]byte, 1))
			c.Close()
		}
		select {
		case s := <-seen:
			return s
		case <-time.After(30 * time.Second):
			t.Fatal("no handshake seen in 30s")
			return ""
		}
	}
	for _, c := range []struct {
		auth  ClientAuth
		rules string
		leaf  *pki.Leaf
		want  string
	}{
		{ClientAuthNone, "", f.cli, Anonymous},
		{ClientAuthRequested, "", nil, Anonymous},
		{ClientAuthRequested, "", f.cli, "User:CN=client"},
		{ClientAuthRequested, "", stranger, "error:"},
		{ClientAuthRequired, "", nil, "error:"},
		{ClientAuthRequired, "", expired, "error:"},
		{ClientAuthRequired, "", stranger, "error:"},
		{ClientAuthRequired, "", named, "User:CN=alice,OU=People,O=acme"},
		{ClientAuthRequired, `RULE:^CN=([^,]*),OU=People,.*$/$1/U`, named, "User:ALICE"},
		{ClientAuthRequired, `RULE:^CN=([^,]*),OU=Services,.*$/$1/`, named, "error:"},
	} {
		srv, err := NewServer(ServerTLS{TLS: base, ClientAuth: c.auth, PrincipalRules: c.rules}, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr, seen := serveWith(t, srv)
		name := "none"
		if c.leaf != nil {
			name = c.leaf.Cert.Subject.CommonName
		}
		if got := dialAs(addr, c.leaf, seen); !strings.HasPrefix(got, c.want) {
			t.Errorf("ssl.client.auth=%s rules %q client %s: %q, want %q", c.auth, c.rules, name, got, c.want)
		}
	}
}

// TestServerTLSFromProperties: listener.name.<l>.ssl.* wins key by key
// over ssl.*, and errors name the key given.
func TestServerTLSFromProperties(t *testing.T) {
	p := properties.New(map[string]string{
		"ssl.keystore.location":                        "/plain.pem",
		"ssl.truststore.location":                      "/trust.pem",
		"ssl.client.auth":                              "requested",
		"listener.name.internal.ssl.keystore.location": "/internal.pem",
		"listener.name.internal.ssl.client.auth":       "required",
		"listener.name.bad.ssl.client.auth":            "sometimes",
	})
	s := ServerTLSFromProperties(p, "INTERNAL")
	if s.KeystoreLocation != "/internal.pem" || s.TruststoreLocation != "/trust.pem" || s.ClientAuth != ClientAuthRequired {
		t.Errorf("INTERNAL: %+v", s)
	}
	s = ServerTLSFromProperties(p, "EXTERNAL")
	if s.KeystoreLocation != "/plain.pem" || s.ClientAuth != ClientAuthRequested {
		t.Errorf("EXTERNAL: %+v", s)
	}
	if p.Err() != nil {
		t.Errorf("unexpected errors: %v", p.Err())
	}
	ServerTLSFromProperties(p, "bad")
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "listener.name.bad.ssl.client.auth") {
		t.Errorf("bad client auth: %v", err)
	}
	if u := p.Unknown(); len(u) != 0 {
		t.Errorf("keys not read: %v", u)
	}
}
