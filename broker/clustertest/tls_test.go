package clustertest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/testkit/proccluster"
)

// sslInterBroker makes the cluster's brokers replicate over an INTERNAL
// listener of protocol SSL with mutual TLS (ssl.client.auth=required, set
// for that listener only), clients staying on PLAINTEXT. Each broker's
// certificate, issued by one test CA, is its server and its client
// certificate.
func sslInterBroker(t *testing.T) []proccluster.Option {
	t.Helper()
	keystore, trust := brokerPEM(t, pki.Options{CommonName: "broker", OrganizationalUnit: "brokers", Hosts: []string{"127.0.0.1"}})
	return []proccluster.Option{proccluster.Listener("INTERNAL"), proccluster.Properties(map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
		"inter.broker.listener.name":                     "INTERNAL",
		"listener.name.internal.ssl.keystore.location":   keystore,
		"listener.name.internal.ssl.truststore.location": trust,
		"listener.name.internal.ssl.client.auth":         "required",
	})}
}

// brokerPEM writes the brokers' certificate, issued as leaf says by a new
// test CA, and the CA's; it returns the two files.
func brokerPEM(t *testing.T, leaf pki.Options) (keystore, trust string) {
	t.Helper()
	ca, err := pki.NewCA("cluster-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(leaf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keystore, trust = filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	if err := cert.WritePEM(keystore); err != nil {
		t.Fatal(err)
	}
	if err := ca.WritePEM(trust); err != nil {
		t.Fatal(err)
	}
	return keystore, trust
}

// TestReplicationLeaderKillsOverSSL is TestReplicationLeaderKills with the
// replica fetchers connecting over the SSL inter-broker listener.
func TestReplicationLeaderKillsOverSSL(t *testing.T) {
	c := newReplCluster(t, 3, replicationProps(nil), sslInterBroker(t)...)
	leaderKillsOn(t, c)
	// The followers reached their leaders on INTERNAL, the only listener
	// the fetchers use.
	fetcherLines := 0
	for id := int32(1); id <= 3; id++ {
		p := c.Proc(id)
		if p == nil {
			continue
		}
		for _, line := range strings.Split(p.Output(), "\n") {
			if !strings.Contains(line, `msg="replica fetcher connecting to the leader"`) {
				continue
			}
			fetcherLines++
			if !strings.Contains(line, "listener=INTERNAL") {
				t.Errorf("broker %d fetched on another listener: %s", id, line)
			}
		}
	}
	if fetcherLines == 0 {
		t.Error("no broker logged a replica fetcher connection")
	}
}
