package security

import (
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/properties"
)

type fixture struct {
	dir        string
	ca, other  *pki.CA
	srv, cli   *pki.Leaf
	srvNoHosts *pki.Leaf
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	var err error
	must := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	f.ca, err = pki.NewCA("ca")
	must(err)
	f.other, err = pki.NewCA("other-ca")
	must(err)
	f.srv, err = f.ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}, Server: true})
	must(err)
	f.srvNoHosts, err = f.ca.Issue(pki.Options{CommonName: "broker-elsewhere", Hosts: []string{"broker.example"}, Server: true})
	must(err)
	f.cli, err = f.ca.Issue(pki.Options{CommonName: "client", Client: true})
	must(err)
	must(f.ca.WritePEM(f.path("ca.pem")))
	must(f.ca.WriteTrustPKCS12(f.path("trust.p12"), "tpass"))
	must(f.cli.WritePEM(f.path("client.pem")))
	must(f.cli.WritePKCS12(f.path("client.p12"), "kpass"))
	must(os.WriteFile(f.path("client.crt"), f.cli.CertPEM, 0o600))
	must(os.WriteFile(f.path("client.key"), f.cli.KeyPEM, 0o600))
	return f
}

func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

// serve runs a TLS server with leaf that requires a client certificate of
// f.ca and returns its address and the subjects it saw.
func (f *fixture) serve(t *testing.T, leaf *pki.Leaf) (string, <-chan string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{leaf.TLSCertificate()},
		ClientCAs:    f.ca.Pool(),
		ClientAuth:   tls.VerifyClientCertIfGiven,
	})
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
				if tc.Handshake() != nil {
					return
				}
				subject := "-"
				if pc := tc.ConnectionState().PeerCertificates; len(pc) > 0 {
					subject = pc[0].Subject.CommonName
				}
				seen <- subject
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), seen
}

func dial(t *testing.T, addr string, cfg *tls.Config, seen <-chan string) (string, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	select {
	case s := <-seen:
		return s, nil
	case <-time.After(30 * time.Second):
		t.Fatal("server saw no handshake within 30s")
		return "", nil
	}
}

// TestClientConfigs: every way of naming a key pair and a trust store
// gives a client that completes mutual TLS as the client certificate.
func TestClientConfigs(t *testing.T) {
	f := newFixture(t)
	addr, seen := f.serve(t, f.srv)
	chain := string(f.cli.CertPEM)
	for name, props := range map[string]map[string]string{
		"PEM file keystore, PEM truststore": {
			"ssl.keystore.type": "PEM", "ssl.keystore.location": f.path("client.pem"),
			"ssl.truststore.type": "PEM", "ssl.truststore.location": f.path("ca.pem"),
		},
		"type guessed from content": {
			"ssl.keystore.location": f.path("client.pem"), "ssl.truststore.location": f.path("ca.pem"),
		},
		"PKCS12 stores": {
			"ssl.keystore.type": "pkcs12", "ssl.keystore.location": f.path("client.p12"), "ssl.keystore.password": "kpass",
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": f.path("trust.p12"), "ssl.truststore.password": "tpass",
		},
		"inline PEM (KIP-651)": {
			"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": string(f.cli.KeyPEM),
			"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(f.ca.CertPEM),
		},
		"librdkafka keys": {
			"ssl.ca.location": f.path("ca.pem"), "ssl.certificate.location": f.path("client.crt"), "ssl.key.location": f.path("client.key"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := properties.New(prefixed("source.dc1.", props))
			tc := TLSFromProperties(p, "source.dc1.")
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
			if u := p.Unknown(); len(u) != 0 {
				t.Errorf("keys not read: %v", u)
			}
			cfg, err := tc.ClientConfig("")
			if err != nil {
				t.Fatal(err)
			}
			subject, err := dial(t, addr, cfg, seen)
			if err != nil {
				t.Fatal(err)
			}
			if subject != "client" {
				t.Errorf("server saw client %q, want client", subject)
			}
		})
	}
}

func prefixed(prefix string, m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// TestTrustAndNames: a server of another CA is refused; one whose
// certificate does not name the address is refused unless endpoint
// identification is off, and then its chain is still checked.
func TestTrustAndNames(t *testing.T) {
	f := newFixture(t)
	trust := TLS{TruststoreLocation: f.path("ca.pem")}
	stranger, err := f.other.Issue(pki.Options{CommonName: "stranger", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}

	addr, seen := f.serve(t, stranger)
	cfg, err := trust.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, addr, cfg, seen); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("server of another CA: %v, want unknown authority", err)
	}
	off := trust
	off.NoEndpointIdentification = true
	cfg, _ = off.ClientConfig("")
	if _, err := dial(t, addr, cfg, seen); err == nil {
		t.Errorf("server of another CA accepted with endpoint identification off")
	}

	addr, seen = f.serve(t, f.srvNoHosts)
	cfg, _ = trust.ClientConfig("")
	if _, err := dial(t, addr, cfg, seen); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("certificate for another host: %v, want a name mismatch", err)
	}
	cfg, _ = off.ClientConfig("")
	if subject, err := dial(t, addr, cfg, seen); err != nil || subject != "-" {
		t.Errorf("endpoint identification off: %q, %v; want a handshake without client certificate", subject, err)
	}
}

// TestBadSettings: each unusable setting is an error naming its key.
func TestBadSettings(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(f.path("garbage.pem"), []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		t    TLS
		want string
	}{
		"missing keystore":        {TLS{KeystoreLocation: f.path("nope.pem")}, "ssl.keystore.location"},
		"PKCS12 wrong password":   {TLS{KeystoreType: "PKCS12", KeystoreLocation: f.path("client.p12"), KeystorePassword: "wrong"}, "ssl.keystore.location"},
		"PEM without key":         {TLS{KeystoreType: "PEM", KeystoreLocation: f.path("ca.pem")}, "no PRIVATE KEY"},
		"garbage truststore":      {TLS{TruststoreType: "PEM", TruststoreLocation: f.path("garbage.pem")}, "ssl.truststore.location"},
		"truststore wrong pass":   {TLS{TruststoreType: "PKCS12", TruststoreLocation: f.path("trust.p12"), TruststorePassword: "x"}, "ssl.truststore.location"},
		"half an inline pair":     {TLS{KeystoreKey: string(f.cli.KeyPEM)}, "go together"},
		"TLS 1.0":                 {TLS{EnabledProtocols: []string{"TLSv1"}}, "ssl.enabled.protocols"},
		"unknown suite":           {TLS{CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, "ssl.cipher.suites"},
		"librdkafka key, no cert": {TLS{KeyLocation: f.path("client.key")}, "go together"},
	} {
		_, err := tc.t.ClientConfig("")
		if err == nil || !errors.Is(err, ErrBadTLS) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadTLS naming %q", name, err, tc.want)
		}
	}
	p := properties.New(map[string]string{
		"ssl.keystore.type": "JKS", "ssl.endpoint.identification.algorithm": "ldap",
		"ssl.ca.location": "a", "ssl.truststore.location": "b",
	})
	TLSFromProperties(p, "")
	err := p.Err()
	for _, key := range []string{"ssl.keystore.type", "ssl.endpoint.identification.algorithm", "ssl.ca.location"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("properties error %v does not name %s", err, key)
		}
	}
}

func TestVersionsAndSuites(t *testing.T) {
	lo, hi, err := TLS{EnabledProtocols: []string{"TLSv1.3"}}.Versions()
	if err != nil || lo != tls.VersionTLS13 || hi != tls.VersionTLS13 {
		t.Errorf("TLSv1.3 only: %x %x %v", lo, hi, err)
	}
	lo, hi, _ = TLS{}.Versions()
	if lo != tls.VersionTLS12 || hi != tls.VersionTLS13 {
		t.Errorf("defaults %x %x", lo, hi)
	}
	ids, err := TLS{CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}.Suites()
	if err != nil || len(ids) != 1 || ids[0] != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("suites %v %v", ids, err)
	}
}

func TestParseProtocol(t *testing.T) {
	for in, want := range map[string]Protocol{"": Plaintext, "ssl": SSL, " SASL_SSL ": SASLSSL, "sasl_plaintext": SASLPlaintext} {
		if got, err := ParseProtocol(in); err != nil || got != want {
			t.Errorf("ParseProtocol(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseProtocol("TLS"); !errors.Is(err, ErrUnknownProtocol) {
		t.Errorf("TLS: %v", err)
	}
	if !SASLSSL.TLS() || !SASLSSL.SASL() || SSL.SASL() || SASLPlaintext.TLS() || Plaintext.TLS() {
		t.Error("TLS()/SASL() wrong")
	}
}
