package broker

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestSASLKcat: kcat (librdkafka) produces and consumes over SASL_SSL with
// SCRAM-SHA-512 and with PLAIN, with librdkafka's key names.
func TestSASLKcat(t *testing.T) {
	b := newSASLBroker(t, nil)
	addr := b.ListenerAddr("SASL_SSL")
	for _, m := range []string{sasl.ScramSHA512, sasl.Plain} {
		t.Run(m, func(t *testing.T) {
			user, password := "alice", aliceSecret
			if m == sasl.Plain {
				user, password = "pat", patSecret
			}
			args := []string{"-b", addr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + m,
				"-X", "sasl.username=" + user, "-X", "sasl.password=" + password, "-X", "ssl.ca.location=" + b.files.caPEM}
			topic := "kcat-sasl-" + strings.ToLower(m)
			var lines []string
			for i := range 20 {
				lines = append(lines, fmt.Sprintf("%s line %d", m, i))
			}
			runKcat(t, strings.Join(lines, "\n")+"\n", append(args, "-P", "-t", topic)...)
			out := runKcat(t, "", append(args, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%s\n")...)
			if strings.TrimSpace(out) != strings.Join(lines, "\n") {
				t.Errorf("kcat over SASL_SSL %s consumed:\n%s", m, out)
			}
		})
	}
}

// TestSASLJavaConsoleClients: Kafka 2.8's console producer and consumer
// round trip over SASL_SSL with SCRAM-SHA-256, configured as Java clients
// are (sasl.jaas.config, a PEM truststore), against a ZooKeeper-backed
// broker; and a user created by Kafka 2.8's `kafka-configs --zookeeper`
// logs in through a client connection.
func TestSASLJavaConsoleClients(t *testing.T) {
	tools := testenv.Kafka28Tools(t)
	connect := zkTestChroot(t)
	b := newSASLBroker(t, func(c *config.Config) {
		c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = 1, connect, 6*time.Second
	})
	addr := b.ListenerAddr("SASL_SSL")
	ctx := testenv.Context(t, 4*time.Minute)
	run := func(stdin string, class string, args ...string) string {
		t.Helper()
		cmd := tools.Command(ctx, class, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	clientConfig := func(user, password string) string {
		path := b.files.path("client-" + user + ".properties")
		props := "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + "\";\n" +
			"ssl.truststore.type=PEM\nssl.truststore.location=" + b.files.caPEM + "\n"
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("console producer and consumer", func(t *testing.T) {
		conf := clientConfig("alice", aliceSecret)
		var lines []string
		for i := range 25 {
			lines = append(lines, fmt.Sprintf("java line %d", i))
		}
		run(strings.Join(lines, "\n")+"\n", "kafka.tools.ConsoleProducer",
			"--bootstrap-server", addr, "--topic", "java-sasl", "--producer.config", conf)
		out := run("", "kafka.tools.ConsoleConsumer", "--bootstrap-server", addr, "--topic", "java-sasl",
			"--from-beginning", "--max-messages", fmt.Sprint(len(lines)), "--timeout-ms", "60000", "--consumer.config", conf)
		if strings.TrimSpace(out) != strings.Join(lines, "\n") {
			t.Errorf("the console consumer read:\n%s", out)
		}
	})

	t.Run("user created by kafka-configs --zookeeper", func(t *testing.T) {
		run("", "kafka.admin.ConfigCommand", "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name", "carol",
			"--add-config", "SCRAM-SHA-256=[iterations=4096,password=carol-secret],SCRAM-SHA-512=[password=carol-secret]")
		b.awaitUser(t, ctx, "carol")
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			c := dialRaw(t, b.ListenerAddr("SASL_PLAINTEXT"))
			if resp := rawLogin(c, mechanism(m, "carol", "carol-secret")); resp.ErrorCode != 0 {
				t.Fatalf("carol's %s login: code %d", m, resp.ErrorCode)
			}
			if md := c.roundTrip(metadataRequest()).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
				t.Errorf("metadata as carol: %+v", md.Brokers)
			}
		}
		// And through the Java client.
		conf := clientConfig("carol", "carol-secret")
		out := run("", "kafka.tools.ConsoleConsumer", "--bootstrap-server", addr, "--topic", "java-sasl",
			"--from-beginning", "--max-messages", "1", "--timeout-ms", "60000", "--consumer.config", conf)
		if strings.TrimSpace(out) != "java line 0" {
			t.Errorf("the console consumer as carol read:\n%s", out)
		}
	})
}
