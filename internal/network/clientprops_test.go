package network_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/tributary/tributary/internal/network"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/security"
)

// certFiles writes a CA and a client certificate as PEM files in a
// temporary directory: ca.pem (truststore) and client.pem (keystore).
type certFiles struct {
	dir string
	ca  *pki.CA
}

func newCertFiles(t *testing.T) certFiles {
	t.Helper()
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(pki.Options{CommonName: "client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	f := certFiles{dir: t.TempDir(), ca: ca}
	if err := ca.WritePEM(f.path("ca.pem")); err != nil {
		t.Fatal(err)
	}
	if err := cli.WritePEM(f.path("client.pem")); err != nil {
		t.Fatal(err)
	}
	if err := cli.WritePKCS12(f.path("client.p12"), "store-secret"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f certFiles) path(name string) string { return filepath.Join(f.dir, name) }

func withPrefix(prefix string, m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// TestClientFromPropertiesEveryKey reads each kind of client settings
// under the prefixes the tiers use; every key given is read.
func TestClientFromPropertiesEveryKey(t *testing.T) {
	f := newCertFiles(t)
	pwFile := f.path("password")
	if err := os.WriteFile(pwFile, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRIBUTARY_TEST_STORE_PASSWORD", "store-secret")
	for name, tc := range map[string]struct {
		props map[string]string
		want  security.Protocol
		tls   bool
		sasl  security.SASL
	}{
		"plaintext by default": {map[string]string{}, security.Plaintext, false, security.SASL{}},
		"SSL with mTLS, PEM": {map[string]string{
			"security.protocol": "ssl", "ssl.truststore.location": f.path("ca.pem"),
			"ssl.keystore.location": f.path("client.pem"), "ssl.endpoint.identification.algorithm": "",
		}, security.SSL, true, security.SASL{}},
		"SSL, PKCS12 keystore, password from the environment": {map[string]string{
			"security.protocol": "SSL", "ssl.truststore.location": f.path("ca.pem"),
			"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.path("client.p12"),
			"ssl.keystore.password": "${env:TRIBUTARY_TEST_STORE_PASSWORD}",
		}, security.SSL, true, security.SASL{}},
		"SASL_SSL SCRAM-SHA-512, JAAS, password from a file": {map[string]string{
			"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"ssl.truststore.location": f.path("ca.pem"),
			"sasl.jaas.config":        security.ScramLoginModule + ` required username="alice" password="${file:` + pwFile + `}";`,
		}, security.SASLSSL, true, security.SASL{Mechanism: "SCRAM-SHA-512", Username: "alice", Password: "file-secret"}},
		"SASL_PLAINTEXT PLAIN, librdkafka keys": {map[string]string{
			"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "plain",
			"sasl.username": "bob", "sasl.password": "${file:" + pwFile + "}",
			// ssl.* keys under a plaintext protocol are read but unused, as in Kafka.
			"ssl.truststore.location": f.path("missing.pem"),
		}, security.SASLPlaintext, false, security.SASL{Mechanism: "PLAIN", Username: "bob", Password: "file-secret"}},
		"Kafka's config.providers keys are accepted": {map[string]string{
			"config.providers": "file", "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
		}, security.Plaintext, false, security.SASL{}},
	} {
		for _, prefix := range []string{"", "source.dc1.", "target."} {
			props := withPrefix(prefix, tc.props)
			props[prefix+"bootstrap.servers"] = "h1:9092, h2:9092"
			props[prefix+"client.id"] = "cid"
			p := properties.New(props)
			c, err := network.ClientFromProperties(p, prefix)
			if err == nil {
				err = p.Err()
			}
			if err != nil {
				t.Errorf("%s (%q): %v", name, prefix, err)
				continue
			}
			if u := p.Unknown(); len(u) > 0 {
				t.Errorf("%s (%q): keys not read: %v", name, prefix, u)
			}
			if strings.Join(c.Brokers, ",") != "h1:9092,h2:9092" || c.ClientID != "cid" {
				t.Errorf("%s (%q): brokers %v, client.id %q", name, prefix, c.Brokers, c.ClientID)
			}
			if c.Protocol != tc.want || (c.TLS != nil) != tc.tls || c.SASL != tc.sasl {
				t.Errorf("%s (%q): protocol %s, TLS %v, SASL %+v; want %s, %v, %+v",
					name, prefix, c.Protocol, c.TLS != nil, c.SASL, tc.want, tc.tls, tc.sasl)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("%s (%q): Validate: %v", name, prefix, err)
			}
		}
	}
}

// TestClientFromPropertiesErrors: each problem is an error naming its key
// with the prefix, and never the secret in it.
func TestClientFromPropertiesErrors(t *testing.T) {
	f := newCertFiles(t)
	const secret = "hunter2"
	for name, tc := range map[string]struct {
		props map[string]string
		key   string
	}{
		"unknown protocol":   {map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		"missing truststore": {map[string]string{"security.protocol": "SSL", "ssl.truststore.location": f.path("nope.pem")}, "ssl.truststore.location"},
		"wrong store password": {map[string]string{"security.protocol": "SSL", "ssl.keystore.type": "PKCS12",
			"ssl.keystore.location": f.path("client.p12"), "ssl.keystore.password": secret}, "ssl.keystore.location"},
		"unset password variable": {map[string]string{"security.protocol": "SSL", "ssl.keystore.type": "PKCS12",
			"ssl.keystore.location": f.path("client.p12"), "ssl.keystore.password": "${env:TRIBUTARY_TEST_UNSET}"}, "ssl.keystore.password"},
		"GSSAPI by default":   {map[string]string{"security.protocol": "SASL_SSL", "sasl.username": "a", "sasl.password": secret}, "sasl.mechanism"},
		"unknown mechanism":   {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.username": "a", "sasl.password": secret}, "sasl.mechanism"},
		"mechanisms differ":   {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "a", "sasl.password": secret}, "sasl.mechanisms"},
		"no credentials":      {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.username"},
		"no password":         {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a"}, "sasl.password"},
		"JAAS and username":   {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.jaas.config": security.PlainLoginModule + ` required username="a" password="` + secret + `";`}, "sasl.jaas.config"},
		"unknown JAAS module": {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": `com.example.Login required username="a" password="` + secret + `";`}, "sasl.jaas.config"},
		"malformed JAAS":      {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": security.PlainLoginModule + ` required username="a" password="` + secret + `"`}, "sasl.jaas.config"},
		"missing secret file": {map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.password": "${file:" + f.path("nope") + "}"}, "sasl.password"},
	} {
		prefix := "source.dc1."
		p := properties.New(withPrefix(prefix, tc.props))
		_, err := network.ClientFromProperties(p, prefix)
		err = errors.Join(err, p.Err())
		if err == nil || !strings.Contains(err.Error(), prefix+tc.key) {
			t.Errorf("%s: %v, want an error naming %s%s", name, err, prefix, tc.key)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %q shows the secret", name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	scram := security.SASL{Mechanism: "SCRAM-SHA-256", Username: "u", Password: "p"}
	for name, tc := range map[string]struct {
		c  network.ClientConfig
		ok bool
	}{
		"zero":                     {network.ClientConfig{}, true},
		"TLS alone means SSL":      {network.ClientConfig{TLS: &tls.Config{}}, true},
		"SASL alone":               {network.ClientConfig{SASL: scram}, true},
		"SSL without a TLS config": {network.ClientConfig{Protocol: security.SSL}, true},
		"TLS with PLAINTEXT":       {network.ClientConfig{Protocol: security.Plaintext, TLS: &tls.Config{}}, false},
		"SASL_SSL without SASL":    {network.ClientConfig{Protocol: security.SASLSSL}, false},
		"SASL with SSL":            {network.ClientConfig{Protocol: security.SSL, SASL: scram}, false},
		"unknown mechanism":        {network.ClientConfig{SASL: security.SASL{Mechanism: "GSSAPI", Username: "u"}}, false},
		"unknown protocol":         {network.ClientConfig{Protocol: "TLS"}, false},
	} {
		err := tc.c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", name, err, tc.ok)
		}
		tc.c.Brokers = []string{"127.0.0.1:1"}
		if cl, nerr := network.NewClient(tc.c); (nerr == nil) != tc.ok {
			t.Errorf("%s: NewClient: %v, want ok=%v", name, nerr, tc.ok)
		} else if nerr == nil {
			cl.Close()
		}
	}
}

// TestSASLOptions: the client carries the mechanism and credentials asked
// for (its first message is the credentials, for PLAIN, or SCRAM's
// client-first message naming the user); TLS options only under a TLS
// protocol. End-to-end SASL is tested against the broker's SASL listeners.
func TestSASLOptions(t *testing.T) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS13}
	for _, tc := range []struct {
		c         network.ClientConfig
		mechanism string
		first     string
		tls       *tls.Config
	}{
		{network.ClientConfig{Protocol: security.SASLPlaintext, SASL: security.SASL{Mechanism: "plain", Username: "alice", Password: "pw"}},
			"PLAIN", "\x00alice\x00pw", nil},
		{network.ClientConfig{Protocol: security.SASLSSL, TLS: cfg, SASL: security.SASL{Mechanism: "SCRAM-SHA-256", Username: "bob", Password: "pw"}},
			"SCRAM-SHA-256", "n,,n=bob,r=", cfg},
		{network.ClientConfig{SASL: security.SASL{Mechanism: "SCRAM-SHA-512", Username: "carol", Password: "pw"}},
			"SCRAM-SHA-512", "n,,n=carol,r=", nil},
	} {
		tc.c.Brokers = []string{"127.0.0.1:1"}
		cl, err := network.NewClient(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
		if len(ms) != 1 || ms[0].Name() != tc.mechanism {
			t.Errorf("%+v: SASL option %v, want %s", tc.c.SASL, ms, tc.mechanism)
		} else if _, first, err := ms[0].Authenticate(context.Background(), "127.0.0.1:1"); err != nil || !strings.HasPrefix(string(first), tc.first) {
			t.Errorf("%s: first message %q, %v; want prefix %q", tc.mechanism, first, err, tc.first)
		}
		got, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
		if got != tc.tls {
			t.Errorf("%s: TLS config %p, want %p", tc.mechanism, got, tc.tls)
		}
		cl.Close()
	}
	cl, err := network.NewClient(network.ClientConfig{Brokers: []string{"127.0.0.1:1"}, Protocol: security.SSL})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); got == nil || got.MinVersion != tls.VersionTLS12 {
		t.Errorf("SSL without a TLS config: %v, want Go's defaults from TLS 1.2", got)
	}
	if ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) != 0 {
		t.Errorf("SSL client carries SASL %v", ms)
	}
}
