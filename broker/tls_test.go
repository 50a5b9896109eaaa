package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// tlsFiles is a CA, a broker certificate for 127.0.0.1 and client
// certificates, written as PEM files into a temporary directory.
type tlsFiles struct {
	dir            string
	ca, other      *pki.CA
	broker, client *pki.Leaf
	// keystore is the broker's PEM keystore; caPEM the CA (truststore).
	keystore, caPEM string
	// clientCert and clientKey are the client's, for kcat.
	clientCert, clientKey string
}

func newTLSFiles(t testing.TB) *tlsFiles {
	t.Helper()
	f := &tlsFiles{dir: t.TempDir()}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	f.ca, err = pki.NewCA("test-ca")
	must(err)
	f.other, err = pki.NewCA("stranger-ca")
	must(err)
	f.broker, err = f.ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1", "localhost"}})
	must(err)
	f.client, err = f.ca.Issue(pki.Options{CommonName: "client", OrganizationalUnit: "apps", Client: true})
	must(err)
	f.keystore, f.caPEM = f.path("broker.pem"), f.path("ca.pem")
	f.clientCert, f.clientKey = f.path("client.crt"), f.path("client.key")
	must(f.broker.WritePEM(f.keystore))
	must(f.ca.WritePEM(f.caPEM))
	must(os.WriteFile(f.clientCert, f.client.CertPEM, 0o600))
	must(os.WriteFile(f.clientKey, f.client.KeyPEM, 0o600))
	return f
}

func (f *tlsFiles) path(name string) string { return filepath.Join(f.dir, name) }

func (f *tlsFiles) serverTLS(auth security.ClientAuth) security.ServerTLS {
	return security.ServerTLS{TLS: security.TLS{KeystoreLocation: f.keystore, TruststoreLocation: f.caPEM}, ClientAuth: auth}
}

// clientTLS trusts the CA and presents leaf (none if nil), even to a
// server whose CAs do not include leaf's issuer.
func (f *tlsFiles) clientTLS(leaf *pki.Leaf) *tls.Config {
	cfg := &tls.Config{RootCAs: f.ca.Pool()}
	if leaf != nil {
		cert := leaf.TLSCertificate()
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return cfg
}

func withPrincipalHook(f func(listener, principal string)) Option {
	return func(b *Broker) { b.onPrincipal = f }
}

// principals records the principals a broker saw.
type principals struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (p *principals) hook(listener, principal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[listener+" "+principal] = true
}

func (p *principals) saw(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[s]
}

// dialTLS opens a raw Kafka connection over TLS.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) *rawConn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c}
}

// tlsRoundTrip produces values to topic through cl and consumes them
// back with a fresh consumer built by consumer, checking every value.
func tlsRoundTrip(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, consumer func(...kgo.Opt) *kgo.Client) {
	t.Helper()
	var want []string
	for i := range 50 {
		v := fmt.Sprintf("%s record %d", topic, i)
		want = append(want, v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons := consumer(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Fatalf("fetch: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("consumed %d records %q..., want %d", len(got), got[:min(3, len(got))], len(want))
	}
}

// expectEOF reads whatever the broker sends (a TLS alert) until it closes
// the connection; a timeout fails.
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after 10s")
	}
}

// metadataBrokers asks addr for metadata through cl and returns each
// broker's host:port.
func metadataBrokers(t *testing.T, ctx context.Context, cl *kgo.Client) map[int32]string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	out := map[int32]string{}
	for _, b := range resp.Brokers {
		out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	return out
}

// TestTwoListeners: one broker serves PLAINTEXT and SSL; franz-go round
// trips over SSL, and Metadata names each listener's own endpoint.
func TestTwoListeners(t *testing.T) {
	f := newTLSFiles(t)
	var seen principals
	b := newTestBroker(t, func(c *config.Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
		c.TLS = f.serverTLS(security.ClientAuthNone)
	}, withPrincipalHook(seen.hook))
	plain, ssl := b.ListenerAddr("PLAINTEXT"), b.ListenerAddr("SSL")
	if plain == "" || ssl == "" || plain == ssl || b.Addr() != plain {
		t.Fatalf("listener addresses: PLAINTEXT %q SSL %q Addr %q", plain, ssl, b.Addr())
	}
	ctx := testenv.Context(t, 60*time.Second)
	sslClient := func(extra ...kgo.Opt) *kgo.Client {
		return newClient(t, ssl, append([]kgo.Opt{kgo.DialTLSConfig(f.clientTLS(nil))}, extra...)...)
	}
	if got := metadataBrokers(t, ctx, sslClient()); got[b.cfg.BrokerID] != ssl || len(got) != 1 {
		t.Errorf("metadata over SSL: %v, want broker at %s", got, ssl)
	}
	if got := metadataBrokers(t, ctx, newClient(t, plain)); got[b.cfg.BrokerID] != plain || len(got) != 1 {
		t.Errorf("metadata over PLAINTEXT: %v, want broker at %s", got, plain)
	}
	tlsRoundTrip(t, ctx, sslClient(kgo.AllowAutoTopicCreation()), "tls-events", sslClient)
	if !seen.saw("SSL " + security.Anonymous) {
		t.Errorf("SSL connections without a client certificate are not %s: %v", security.Anonymous, seen.seen)
	}
	// The registration carries both endpoints and their protocols.
	snap := b.metadata()
	br, ok := snap.Broker(b.cfg.BrokerID)
	if !ok || len(br.Endpoints) != 2 || br.Protocols["SSL"] != "SSL" || strconv.Itoa(int(br.Port)) != portOf(t, plain) {
		t.Errorf("registration: %+v", br)
	}
}

// TestMutualTLS: ssl.client.auth=required on the SSL listener (set per
// listener), the principal mapped from the certificate subject; franz-go
// and kcat round trip with a client certificate, and a client without one
// is refused.
func TestMutualTLS(t *testing.T) {
	f := newTLSFiles(t)
	var seen principals
	props := map[string]string{
		"broker.id": "1", "log.dirs": t.TempDir(),
		"listeners":                                     "SSL://127.0.0.1:0",
		"security.inter.broker.protocol":                "SSL",
		"ssl.keystore.location":                         f.keystore,
		"ssl.truststore.location":                       f.caPEM,
		"listener.name.ssl.ssl.client.auth":             "required",
		"listener.name.ssl.ssl.principal.mapping.rules": `RULE:^CN=([^,]*),OU=apps$/$1/U,DEFAULT`,
	}
	cfg, warnings, err := config.FromProperties(props)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	cfg.RetentionCheckInterval = time.Hour
	b := startTestBroker(t, cfg, withPrincipalHook(seen.hook))
	addr := b.ListenerAddr("SSL")
	ctx := testenv.Context(t, 90*time.Second)
	mtls := func(extra ...kgo.Opt) *kgo.Client {
		return newClient(t, addr, append([]kgo.Opt{kgo.DialTLSConfig(f.clientTLS(f.client))}, extra...)...)
	}
	tlsRoundTrip(t, ctx, mtls(kgo.AllowAutoTopicCreation()), "mtls-events", mtls)
	if !seen.saw("SSL User:CLIENT") {
		t.Errorf("principal User:CLIENT not seen: %v", seen.seen)
	}

	// No client certificate: the handshake fails, the broker goes on.
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, f.clientTLS(nil))
	if err == nil {
		raw := &rawConn{t: t, conn: c}
		raw.expectClosed()
		c.Close()
	}
	healthy(t, dialTLS(t, addr, f.clientTLS(f.client)))

	// kcat (librdkafka) with its own key names.
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("kcat line %d", i))
	}
	sslArgs := []string{"-b", addr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + f.caPEM,
		"-X", "ssl.certificate.location=" + f.clientCert, "-X", "ssl.key.location=" + f.clientKey}
	runKcat(t, strings.Join(lines, "\n")+"\n", append(sslArgs, "-P", "-t", "kcat-tls")...)
	out := runKcat(t, "", append(sslArgs, "-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-f", "%s\n")...)
	if strings.TrimSpace(out) != strings.Join(lines, "\n") {
		t.Errorf("kcat over mTLS consumed:\n%s", out)
	}
	md := runKcat(t, "", append(sslArgs, "-L")...)
	if !strings.Contains(md, "broker 1 at "+addr) {
		t.Errorf("kcat -L over SSL does not name the SSL endpoint %s:\n%s", addr, md)
	}
}

// TestTLSBadInput: each bad client closes only its own connection; a
// bystander and new clients are served throughout.
func TestTLSBadInput(t *testing.T) {
	f := newTLSFiles(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
		c.TLS = f.serverTLS(security.ClientAuthRequired)
		c.TLSHandshakeTimeout = 500 * time.Millisecond
		c.SocketRequestMaxBytes = 1 << 20
	})
	plain, ssl := b.ListenerAddr("PLAINTEXT"), b.ListenerAddr("SSL")
	good := f.clientTLS(f.client)
	bystander := dialTLS(t, ssl, good)
	healthy(t, bystander)
	expired, err := f.ca.Issue(pki.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := f.other.Issue(pki.Options{CommonName: "stranger", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	handshakeErrors := func() float64 {
		return counterValue(t, b.reg, "tributary_broker_bad_requests_total", map[string]string{"reason": "tls_handshake"})
	}
	badCert := func(leaf *pki.Leaf) func(t *testing.T) {
		return func(t *testing.T) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ssl, f.clientTLS(leaf))
			if err != nil {
				return // refused in the handshake (TLS 1.2)
			}
			defer c.Close()
			// TLS 1.3: the refusal arrives with the first read.
			raw := &rawConn{t: t, conn: c}
			req := kmsg.NewPtrApiVersionsRequest()
			var fm kmsg.RequestFormatter
			_, _ = c.Write(fm.AppendRequest(nil, req, 1))
			raw.expectClosed()
		}
	}
	for _, tc := range []struct {
		name     string
		run      func(t *testing.T)
		refusals float64 // tls_handshake errors it adds
	}{
		{"plaintext client on the TLS port", func(t *testing.T) {
			c := dialRaw(t, ssl)
			c.send(kmsg.NewPtrApiVersionsRequest())
			c.expectClosed()
		}, 1},
		{"TLS client on the plaintext port", func(t *testing.T) {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", plain, good)
			if err == nil {
				conn.Close()
				t.Fatal("TLS handshake with the PLAINTEXT listener succeeded")
			}
		}, 0},
		{"garbage during the handshake", func(t *testing.T) {
			c := dialRaw(t, ssl)
			c.writeRaw([]byte("\x16\x03\x01\x00\x10this is no hello at all"))
			expectEOF(t, c.conn) // after a TLS alert
		}, 1},
		{"silent client", func(t *testing.T) {
			c := dialRaw(t, ssl)
			c.expectClosed() // ssl.handshake.timeout.ms is 500 ms
		}, 1},
		{"expired client certificate", badCert(expired), 1},
		{"untrusted client certificate", badCert(stranger), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := handshakeErrors()
			tc.run(t)
			healthy(t, bystander)
			healthy(t, dialTLS(t, ssl, good))
			healthy(t, dialRaw(t, plain))
			if tc.refusals > 0 {
				// The server side may finish its bookkeeping just after the
				// client saw the close.
				deadline := time.Now().Add(10 * time.Second)
				for handshakeErrors()-before < tc.refusals && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if got := handshakeErrors() - before; got != tc.refusals {
					t.Errorf("tls_handshake errors rose by %v, want %v", got, tc.refusals)
				}
			}
		})
	}
}

// TestTLSCertificateReload: a replaced keystore is served to new
// connections without a restart; an invalid one is refused and the
// previous certificate kept.
func TestTLSCertificateReload(t *testing.T) {
	f := newTLSFiles(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.Listeners = "SSL://127.0.0.1:0"
		c.SecurityInterBrokerProtocol = "SSL"
		c.TLS = f.serverTLS(security.ClientAuthNone)
		c.TLSReloadInterval = 20 * time.Millisecond
	})
	addr := b.ListenerAddr("SSL")
	serial := func() string {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, f.clientTLS(nil))
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	awaitSerial := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for serial() != want {
			if time.Now().After(deadline) {
				t.Fatalf("serial still %s after 30s, want %s", serial(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	awaitSerial(f.broker.Cert.SerialNumber.String())
	old := dialTLS(t, addr, f.clientTLS(nil))
	healthy(t, old)

	next, err := f.ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	replace := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(f.keystore+".tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.keystore+".tmp", f.keystore); err != nil {
			t.Fatal(err)
		}
	}
	replace(append(append([]byte{}, next.KeyPEM...), next.CertPEM...))
	awaitSerial(next.Cert.SerialNumber.String())
	healthy(t, old) // established connections are untouched

	replace([]byte("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n"))
	// The poller sees the change within a few intervals; the old
	// certificate must survive it.
	for range 10 {
		time.Sleep(20 * time.Millisecond)
		if got := serial(); got != next.Cert.SerialNumber.String() {
			t.Fatalf("after an invalid keystore: serial %s, want the kept %s", got, next.Cert.SerialNumber)
		}
	}
}

// TestListenerConfig: the listener keys are validated as Kafka does, each
// error naming its key.
func TestListenerConfig(t *testing.T) {
	f := newTLSFiles(t)
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{"log.dirs": t.TempDir()}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		props map[string]string
		want  string // "" = valid
	}{
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.location": f.keystore}, ""},
		{map[string]string{"listeners": "INTERNAL://:9092,EXTERNAL://:9093",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL", "inter.broker.listener.name": "internal",
			"listener.name.external.ssl.keystore.location": f.keystore}, ""},
		{map[string]string{"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "listeners: each listener must have a different name"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9092", "ssl.keystore.location": f.keystore}, "listeners: each listener must have a different port"},
		{map[string]string{"listeners": "INTERNAL://:9092"}, "listeners: listener INTERNAL has no security protocol"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map"},
		{map[string]string{"listeners": "SSL://:9093", "ssl.keystore.location": f.keystore}, "security.inter.broker.protocol"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "inter.broker.listener.name": "SSL"}, "inter.broker.listener.name: SSL is not a listener"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "inter.broker.listener.name": "PLAINTEXT",
			"security.inter.broker.protocol": "PLAINTEXT"}, "only one may be set"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "advertised.listeners": "SSL://h:9093"}, "advertised.listeners: listener SSL is not in listeners"},
		{map[string]string{"listeners": "PLAINTEXT://:0", "advertised.listeners": "PLAINTEXT://h:0"}, "port 0 cannot be advertised"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093"}, "listener.name.ssl.ssl.keystore.location"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.location": f.path("missing.pem")}, "ssl.keystore.location"},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "ssl.client.auth": "always"}, "ssl.client.auth"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.location": f.keystore,
			"listener.name.ssl.ssl.principal.mapping.rules": "RULE:broken"}, "listener.name.ssl.ssl.principal.mapping.rules"},
	} {
		_, warnings, err := config.FromProperties(base(tc.props))
		switch {
		case tc.want == "" && (err != nil || len(warnings) != 0):
			t.Errorf("%v: %v %v", tc.props, err, warnings)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one containing %q", tc.props, err, tc.want)
		}
	}
	// Advertised per listener; a listener not advertised keeps its bound
	// address.
	cfg, _, err := config.FromProperties(base(map[string]string{
		"listeners":             "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"advertised.listeners":  "SSL://tls.example:19093",
		"ssl.keystore.location": f.keystore, "listener.name.ssl.ssl.client.auth": "requested",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSFor("SSL").ClientAuth != security.ClientAuthRequested || cfg.TLSFor("SSL").KeystoreLocation != f.keystore {
		t.Errorf("SSL listener settings %+v", cfg.TLSFor("SSL"))
	}
	cfg.RetentionCheckInterval = time.Hour
	b := startTestBroker(t, cfg)
	eps, _ := b.registration()
	want := []string{"PLAINTEXT://" + b.ListenerAddr("PLAINTEXT"), "SSL://tls.example:19093"}
	if strings.Join(eps, ",") != strings.Join(want, ",") {
		t.Errorf("endpoints %v, want %v", eps, want)
	}
}

// TestHandshakingConnectionsCount: connections still in their TLS
// handshake count against max.connections; one more is refused, and a
// slot freed by a silent client's handshake timeout lets a client in.
func TestHandshakingConnectionsCount(t *testing.T) {
	f := newTLSFiles(t)
	b := newTestBroker(t, func(c *config.Config) {
		c.Listeners = "SSL://127.0.0.1:0"
		c.SecurityInterBrokerProtocol = "SSL"
		c.TLS = f.serverTLS(security.ClientAuthNone)
		c.TLSHandshakeTimeout = 3 * time.Second
		c.Limits.MaxConnections = 3
	})
	addr := b.ListenerAddr("SSL")
	refused := func() float64 {
		return counterValue(t, b.reg, "tributary_broker_connections_refused_total", map[string]string{"limit": "max.connections"})
	}
	var silent []*rawConn
	for range 3 {
		silent = append(silent, dialRaw(t, addr)) // never says hello
	}
	// The three are accepted and counted once the broker has seen them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := refused()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, f.clientTLS(nil))
		if err == nil {
			c.Close()
		}
		if err != nil && refused() > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fourth connection was not refused while three handshakes were pending (dial err %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The handshake timeout closes the silent ones and frees their slots.
	for _, c := range silent {
		c.expectClosed() // within 5 s; the timeout is 3 s
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, f.clientTLS(nil))
		if err == nil {
			raw := &rawConn{t: t, conn: c}
			healthy(t, raw)
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no client admitted after the handshake timeouts: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
