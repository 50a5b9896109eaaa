package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tributary/tributary/internal/security"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCommandConfig: the file's bootstrap.servers, client.id and security
// keys are read; --bootstrap and --client-id override them.
func TestCommandConfig(t *testing.T) {
	t.Setenv("TRIBUTARY_TEST_CLI_PASSWORD", "cli-secret")
	path := writeConfig(t, "bootstrap.servers=127.0.0.1:9094\nclient.id=from-file\n"+
		"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"+
		"  username=\"alice\" password=\"${env:TRIBUTARY_TEST_CLI_PASSWORD}\";\n"+
		"acks=all\n") // a producer key of Kafka's tools: ignored
	for _, tc := range []struct {
		args        []string
		brokers, id string
	}{
		{[]string{"--command-config", path}, "127.0.0.1:9094", "from-file"},
		{[]string{"--command-config", path, "--bootstrap", "127.0.0.1:1", "--client-id", "from-flag"}, "127.0.0.1:1", "from-flag"},
	} {
		var o clientOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		c := o.connection()
		if strings.Join(c.Brokers, ",") != tc.brokers || c.ClientID != tc.id {
			t.Errorf("%v: brokers %v, client.id %q; want %s, %s", tc.args, c.Brokers, c.ClientID, tc.brokers, tc.id)
		}
		if c.Protocol != security.SASLPlaintext || c.SASL != (security.SASL{Mechanism: "SCRAM-SHA-256", Username: "alice", Password: "cli-secret"}) {
			t.Errorf("%v: security %s %+v", tc.args, c.Protocol, c.SASL)
		}
	}
}

// TestCommandConfigErrors: a missing file or a bad key fails every client
// command before any network traffic, naming the flag and the key, never a
// secret.
func TestCommandConfigErrors(t *testing.T) {
	bad := writeConfig(t, "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=hunter2\nssl.truststore.location=/nonexistent/ca.pem\n")
	for _, args := range [][]string{
		{"produce", "--topic", "t"},
		{"consume", "--topic", "t"},
		{"topics", "list"},
		{"bench", "produce", "--topic", "t"},
	} {
		for file, want := range map[string]string{
			filepath.Join(t.TempDir(), "missing.properties"): "--command-config",
			bad: "ssl.truststore.location",
		} {
			full := append(append([]string{}, args...), "--bootstrap", "127.0.0.1:1", "--command-config", file)
			r := runCLI(t, time.Minute, "", full...)
			if r.err == nil || !errors.Is(r.err, errBadFlag) || !strings.Contains(r.err.Error(), want) {
				t.Errorf("%v: %v, want a bad-flag error naming %s", full, r.err, want)
			}
			if r.err != nil && strings.Contains(r.err.Error(), "hunter2") {
				t.Errorf("%v: error shows the password: %v", full, r.err)
			}
		}
	}
}

// TestAuditServeSecurity: --command-config secures every cluster but those
// with a --cluster-config of their own.
func TestAuditServeSecurity(t *testing.T) {
	common := writeConfig(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=common\nsasl.password=x\n")
	own := writeConfig(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=own\nsasl.password=y\n")
	o := auditServeOptions{
		clusters: []string{"dc1=127.0.0.1:1", "dc2=127.0.0.1:2"}, commandConfig: common,
		clusterConfigs: []string{"dc2=" + own}, listen: "127.0.0.1:0", dir: t.TempDir(),
		grace: 1, maxFuture: time.Hour, retention: time.Hour, topic: "__audit",
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Clusters[0].Security.SASL.Username; u != "common" {
		t.Errorf("dc1 user %q, want common", u)
	}
	if s := cfg.Clusters[1].Security.SASL; s.Username != "own" || s.Mechanism != "SCRAM-SHA-512" {
		t.Errorf("dc2 SASL %+v, want own's", s)
	}
	o.clusterConfigs = []string{"dc3=" + own}
	if _, err := o.config(); err == nil || !strings.Contains(err.Error(), "--cluster-config") {
		t.Errorf("a --cluster-config for no cluster: %v", err)
	}
}
