package serde_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/properties"
)

func TestClientConfigFromProperties(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		props            map[string]string
		url, user, pass  string
		truststore, fail string
	}{
		{props: map[string]string{"schema.registry.url": "https://r:8081", "basic.auth.credentials.source": "USER_INFO",
			"basic.auth.user.info": "alice:se:cret", "schema.registry.ssl.truststore.location": "/ca.pem"},
			url: "https://r:8081", user: "alice", pass: "se:cret", truststore: "/ca.pem"},
		{props: map[string]string{"schema.registry.url": "https://r:8081", "schema.registry.basic.auth.user.info": "bob:pw"},
			url: "https://r:8081", user: "bob", pass: "pw"},
		{props: map[string]string{"schema.registry.url": "https://carol:pw@r:8081", "basic.auth.credentials.source": "url"},
			url: "https://r:8081", user: "carol", pass: "pw"},
		{props: map[string]string{"schema.registry.url": "https://r", "basic.auth.user.info": "dave:${file:" + pwFile + "}"},
			url: "https://r", user: "dave", pass: "from-file"},
		{props: map[string]string{"basic.auth.user.info": "dave:${file:/nonexistent/pw}"}, fail: "basic.auth.user.info"},
		{props: map[string]string{"basic.auth.credentials.source": "SASL_INHERIT"}, fail: "basic.auth.credentials.source"},
		{props: map[string]string{"basic.auth.credentials.source": "USER_INFO"}, fail: "basic.auth.credentials.source"},
		{props: map[string]string{"basic.auth.user.info": "nocolon"}, fail: "basic.auth.user.info"},
		{props: map[string]string{"schema.registry.url": "http://r", "basic.auth.credentials.source": "URL"}, fail: "basic.auth.credentials.source"},
	} {
		p := properties.New(tc.props)
		c := serde.ClientConfigFromProperties(p, "")
		err := p.Err()
		if tc.fail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fail) {
				t.Errorf("%v: err %v, want one naming %s", tc.props, err, tc.fail)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.props, err)
			continue
		}
		if c.URL != tc.url || c.Username != tc.user || c.Password != tc.pass || c.TLS.TruststoreLocation != tc.truststore {
			t.Errorf("%v: got %+v", tc.props, c)
		}
		if u := p.Unknown(); len(u) > 0 {
			t.Errorf("%v: keys not read %v", tc.props, u)
		}
	}
	if _, err := serde.NewRegistryClient(serde.ClientConfig{URL: "https://u:p@r:8081"}); err == nil {
		t.Error("credentials in the URL given straight to NewRegistryClient were accepted")
	}
}
