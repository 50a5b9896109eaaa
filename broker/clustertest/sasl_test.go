package clustertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/testkit/proccluster"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// saslSSLInterBroker makes the cluster's brokers replicate over an
// INTERNAL listener of protocol SASL_SSL: TLS with the test CA, and
// SCRAM-SHA-512 as the user "broker", whose credential is written into
// /config/users before the brokers start (as an operator would with
// kafka-configs). Clients stay on PLAINTEXT.
func saslSSLInterBroker(t *testing.T, connect string) []proccluster.Option {
	t.Helper()
	keystore, trust := brokerPEM(t, pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := sasl.NewCredentialStore(ctx, func(ctx context.Context) (coord.Session, error) {
		return zkcoord.Connect(ctx, connect, zkcoord.Config{})
	}, nil)
	defer store.Close()
	mech, _ := sasl.ScramMechanismNamed(sasl.ScramSHA512)
	cred, err := sasl.NewScramCredential(mech, "broker-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.UpdateUser(ctx, "broker", func(cfg map[string]string) error {
		cfg[sasl.ScramSHA512] = cred.String()
		return nil
	}); err != nil {
		t.Fatalf("creating the brokers' user: %v", err)
	}
	return []proccluster.Option{proccluster.Listener("INTERNAL"), proccluster.Properties(map[string]string{
		"listener.security.protocol.map":                        "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		"inter.broker.listener.name":                            "INTERNAL",
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.internal.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		"listener.name.internal.ssl.keystore.location":          keystore,
		"listener.name.internal.ssl.truststore.location":        trust,
	})}
}

// TestReplicationLeaderKillsOverSASLSSL is TestReplicationLeaderKills with
// the replica fetchers logging in with SCRAM-SHA-512 over the SASL_SSL
// inter-broker listener.
func TestReplicationLeaderKillsOverSASLSSL(t *testing.T) {
	connect := zktest.Chroot(t, zk(t), "replication")
	c := newReplClusterOn(t, connect, 3, replicationProps(nil), saslSSLInterBroker(t, connect)...)
	leaderKillsOn(t, c)
	fetcherLines := 0
	for id := int32(1); id <= 3; id++ {
		p := c.Proc(id)
		if p == nil {
			continue
		}
		out := p.Output()
		if strings.Contains(out, "SASL authentication failed") {
			t.Errorf("broker %d refused a login:\n%s", id, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, `msg="replica fetcher connecting to the leader"`) {
				fetcherLines++
				if !strings.Contains(line, "listener=INTERNAL") {
					t.Errorf("broker %d fetched on another listener: %s", id, line)
				}
			}
		}
	}
	if fetcherLines == 0 {
		t.Error("no broker logged a replica fetcher connection")
	}
}
