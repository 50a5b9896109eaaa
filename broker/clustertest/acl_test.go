package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/devcluster"
	"github.com/tributary/tributary/internal/pki"
	"github.com/tributary/tributary/internal/security"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// aclPasswords are the SCRAM users of TestACLsAcrossBrokers.
var aclPasswords = map[string]string{"admin": "admin-secret", "alice": "alice-secret"}

// TestACLsAcrossBrokers: three in-process brokers on ZooKeeper with the
// authorizer on (clients on SASL_PLAINTEXT with SCRAM; the brokers
// replicate over mutual TLS as User:broker, a super user). An ACL created
// through broker 1's CreateAcls, and ACLs written by Kafka 2.8's
// `kafka-acls --authorizer-properties zookeeper.connect=...` (a Deny, a
// prefixed Allow), take effect on every broker: a client bound to each one
// sees the allowance and the denial. Kafka's Java producer, denied, exits
// non-zero with a TopicAuthorizationException instead of hanging; allowed
// again, it writes.
func TestACLsAcrossBrokers(t *testing.T) {
	t.Parallel() // broker processes of its own and JVM start-ups, mostly waited on
	tools := testenv.Kafka28Tools(t)
	connect := zktest.Chroot(t, testenv.ZooKeeper(t), "acl-brokers")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca, err := pki.NewCA("acl-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(pki.Options{CommonName: "broker", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	keystore, trust := filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	if err := leaf.WritePEM(keystore); err != nil {
		t.Fatal(err)
	}
	if err := ca.WritePEM(trust); err != nil {
		t.Fatal(err)
	}
	c, err := devcluster.Start(ctx, devcluster.Config{
		Dir: filepath.Join(dir, "cluster"), Brokers: 3, ZooKeeper: connect,
		Listeners: []devcluster.Listener{
			{Name: "CLIENTS", Protocol: security.SASLPlaintext},
			{Name: "INTERNAL", Protocol: security.SSL, ClientAuth: security.ClientAuthRequired},
		},
		InterBrokerListener: "INTERNAL",
		TLS:                 security.TLS{KeystoreType: security.StorePEM, KeystoreLocation: keystore, TruststoreType: security.StorePEM, TruststoreLocation: trust},
		PrincipalRules:      `RULE:^CN=([^,]*).*$/$1/,DEFAULT`,
		ScramUsers:          aclPasswords,
		Authorizer:          config.Authorizer{Enabled: true, SuperUsers: []string{"User:broker", "User:admin"}},
		Logger:              testenv.Logger(t, slog.LevelWarn),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	addrs := c.Bootstrap()

	admin := newClient(t, addrs, scramOpt("admin"))
	for _, topic := range []string{"orders", "logs-1"} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 3, 3
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctx, admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("admin creating %s: %v", topic, err)
		}
	}

	// One client per broker, each sending only to its own broker.
	alice := make([]*kgo.Client, len(addrs))
	for i, a := range addrs {
		alice[i] = newClient(t, []string{a}, scramOpt("alice"))
	}
	// described is, per broker, alice's Metadata error for topic (nil:
	// allowed and listed).
	described := func(topic string) []error {
		errs := make([]error, len(alice))
		for i, cl := range alice {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := cl.Broker(i+1).Request(ctx, req)
			if err != nil {
				errs[i] = err
				continue
			}
			md := resp.(*kmsg.MetadataResponse)
			if len(md.Topics) != 1 {
				errs[i] = fmt.Errorf("broker %d: %d topics in the answer", i+1, len(md.Topics))
				continue
			}
			errs[i] = kerr.ErrorForCode(md.Topics[0].ErrorCode)
		}
		return errs
	}
	everywhere := func(what, topic string, want error) {
		t.Helper()
		testenv.WaitFor(t, 30*time.Second, what, func() (bool, string) {
			errs := described(topic)
			for _, err := range errs {
				if err != want {
					return false, fmt.Sprintf("per broker: %v, want %v", errs, want)
				}
			}
			return true, ""
		})
	}
	everywhere("alice denied orders before any ACL", "orders", kerr.TopicAuthorizationFailed)

	// Through broker 1's CreateAcls.
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host = "User:alice", "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	resp, err := admin.Broker(1).Request(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != 0 {
		t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(code))
	}
	everywhere("alice's Write on orders (CreateAcls on broker 1) on every broker", "orders", nil)

	// Through ZooKeeper, with Kafka's own tool.
	tool := func(args ...string) {
		t.Helper()
		runJava(t, tools.Command(ctx, "kafka.admin.AclCommand", append([]string{"--authorizer-properties", "zookeeper.connect=" + connect}, args...)...), true)
	}
	everywhere("logs-1 hidden from alice", "logs-1", kerr.TopicAuthorizationFailed)
	tool("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	everywhere("the tool's prefixed Allow on logs- on every broker", "logs-1", nil)
	tool("--add", "--deny-principal", "User:alice", "--operation", "Describe", "--topic", "orders")
	everywhere("the tool's Deny on orders winning on every broker", "orders", kerr.TopicAuthorizationFailed)

	// Kafka's Java producer, denied: an error and a non-zero exit, soon.
	props := filepath.Join(dir, "alice.properties")
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="%s";`, aclPasswords["alice"])
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="+jaas+"\nmax.block.ms=30000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	produce := func() *exec.Cmd {
		cmd := tools.Command(ctx, "kafka.tools.ConsoleProducer", "--bootstrap-server", strings.Join(addrs, ","),
			"--topic", "orders", "--producer.config", props, "--sync")
		cmd.Stdin = strings.NewReader("order-1\n")
		return cmd
	}
	start := time.Now()
	out := runJava(t, produce(), false)
	if !strings.Contains(out, "TopicAuthorizationException") {
		t.Errorf("the denied ConsoleProducer's output lacks TopicAuthorizationException:\n%s", out)
	}
	t.Logf("the denied ConsoleProducer failed after %v:\n%s", time.Since(start).Round(time.Millisecond), lastLines(out, 3))

	tool("--remove", "--force", "--deny-principal", "User:alice", "--operation", "Describe", "--topic", "orders")
	everywhere("the Deny's removal on every broker", "orders", nil)
	runJava(t, produce(), true)
	stored, err := c.DeleteACLs(ctx, acl.Filter{Type: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny})
	if err != nil || len(stored) != 2 {
		t.Errorf("the ACLs left: %v (%v); want alice's Write on orders and Describe on logs-", stored, err)
	}
}

// scramOpt logs in as user with SCRAM-SHA-512.
func scramOpt(user string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: aclPasswords[user]}.AsSha512Mechanism())
}

// runJava runs a Kafka tool; it must succeed when ok, and fail otherwise.
// It returns stdout and stderr together.
func runJava(t *testing.T, cmd *exec.Cmd, ok bool) string {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ok && err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args[len(cmd.Args)-4:], " "), err, out.String())
	}
	if !ok && err == nil {
		t.Fatalf("%s succeeded; want a non-zero exit\n%s", strings.Join(cmd.Args[len(cmd.Args)-4:], " "), out.String())
	}
	return out.String()
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
