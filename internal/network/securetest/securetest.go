// Package securetest is the one test fixture of a secured HTTP server: a
// test CA with a server certificate for 127.0.0.1 and localhost (PEM and
// PKCS12 keystores) and a client certificate, a users file in Jetty's
// format with one user per role, and the registry.properties-style keys
// naming them. It is for tests only.
//
// Users (name: role, password kind): admin: admin, plain; writer:
// developer, MD5; reader: user, bcrypt; viewer: viewer, bcrypt; nobody: no
// role, plain. Each password is Password(name). Grants: admin=admin,
// developer=write, user=read, viewer=read.
package securetest

import (
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/tributary/tributary/internal/pki"
)

// StorePassword protects the PKCS12 stores.
const StorePassword = "store-secret"

// Users are the users of the users file, in a fixed order.
var Users = []string{"admin", "writer", "reader", "viewer", "nobody"}

// Password is name's password.
func Password(name string) string { return name + "-pw" }

// Fixture is the material of a secured server, in files under Dir.
type Fixture struct {
	Dir                     string
	CA                      *pki.CA
	Server, Client          *pki.Leaf
	ServerPEM, ServerPKCS12 string // keystores
	CAPEM, CAPKCS12         string // truststores
	ClientPEM               string // client keystore (key and chain)
	UsersFile               string
}

// New makes the fixture in t.TempDir().
func New(t testing.TB) *Fixture {
	t.Helper()
	f := &Fixture{Dir: t.TempDir()}
	var err error
	if f.CA, err = pki.NewCA("securetest CA"); err != nil {
		t.Fatal(err)
	}
	if f.Server, err = f.CA.Issue(pki.Options{CommonName: "localhost", Hosts: []string{"127.0.0.1", "localhost"}, Server: true}); err != nil {
		t.Fatal(err)
	}
	if f.Client, err = f.CA.Issue(pki.Options{CommonName: "client", Client: true}); err != nil {
		t.Fatal(err)
	}
	p := func(n string) string { return filepath.Join(f.Dir, n) }
	f.ServerPEM, f.ServerPKCS12, f.CAPEM, f.CAPKCS12, f.ClientPEM, f.UsersFile =
		p("server.pem"), p("server.p12"), p("ca.pem"), p("ca.p12"), p("client.pem"), p("users.properties")
	for _, err := range []error{
		f.Server.WritePEM(f.ServerPEM), f.Server.WritePKCS12(f.ServerPKCS12, StorePassword),
		f.CA.WritePEM(f.CAPEM), f.CA.WriteTrustPKCS12(f.CAPKCS12, StorePassword),
		f.Client.WritePEM(f.ClientPEM),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	md := md5.Sum([]byte(Password("writer")))
	hash := func(name string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(Password(name)), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	users := fmt.Sprintf("# Jetty HashLoginService format\nadmin: %s,admin\nwriter: MD5:%s, developer\nreader: %s,user\nviewer: %s,viewer\nnobody: %s\n",
		Password("admin"), hex.EncodeToString(md[:]), hash("reader"), hash("viewer"), Password("nobody"))
	if err := os.WriteFile(f.UsersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Props returns the keys of an HTTPS listener with basic authentication
// (PEM keystore), under prefix ("" or "metrics.").
func (f *Fixture) Props(prefix string) map[string]string {
	m := map[string]string{
		"ssl.keystore.location":         f.ServerPEM,
		"ssl.keystore.type":             "PEM",
		"authentication.method":         "BASIC",
		"authentication.realm":          "SchemaRegistry-Props",
		"authentication.roles":          "admin,developer,user,viewer",
		"authentication.users.file":     f.UsersFile,
		"authorization.roles.admin":     "admin",
		"authorization.roles.developer": "write",
		"authorization.roles.user":      "read",
		"authorization.roles.viewer":    "read",
	}
	out := map[string]string{}
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// WriteProps writes Props(prefix) plus extra as a properties file.
func (f *Fixture) WriteProps(t testing.TB, name, prefix string, extra map[string]string) string {
	t.Helper()
	m := f.Props(prefix)
	for k, v := range extra {
		m[k] = v
	}
	var b []byte
	for k, v := range m {
		b = fmt.Appendf(b, "%s=%s\n", k, v)
	}
	path := filepath.Join(f.Dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TLSConfig trusts the CA; with a client certificate when cert.
func (f *Fixture) TLSConfig(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: f.CA.Pool(), MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{f.Client.TLSCertificate()}
	}
	return c
}

// HTTPClient is a client trusting the CA that sends user's credentials
// ("" sends none).
func (f *Fixture) HTTPClient(user string, cert bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = f.TLSConfig(cert)
	var rt http.RoundTripper = tr
	if user != "" {
		rt = basicAuth{user, Password(user), tr}
	}
	return &http.Client{Transport: rt}
}

type basicAuth struct {
	user, pass string
	next       http.RoundTripper
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.pass)
	return b.next.RoundTrip(r)
}
