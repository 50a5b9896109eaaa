package broker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/broker/acl"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestKafka39AclCommand: Kafka 3.9's kafka-acls --bootstrap-server (over
// a PLAINTEXT listener whose User:ANONYMOUS is a super user here) adds,
// lists and removes literal and prefixed ACLs through CreateAcls,
// DescribeAcls and DeleteAcls, and the broker enforces them on User:alice
// (mutual TLS) at once.
func TestKafka39AclCommand(t *testing.T) {
	t.Parallel() // mostly JVM start-ups: beside the other slow broker tests
	tools := testenv.Kafka39Tools(t)
	ab := newACLBroker(t, map[string]string{
		"listeners":   "SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"super.users": "User:admin;User:ANONYMOUS",
	})
	ctx := testenv.Context(t, 4*time.Minute)
	admin := ab.client(t, "admin")
	createTopic(t, ctx, admin, "orders", 1)
	createTopic(t, ctx, admin, "logs-a", 1)
	bootstrap := ab.ListenerAddr("PLAINTEXT")
	run := func(args ...string) string {
		t.Helper()
		cmd := tools.Command(ctx, "kafka.admin.AclCommand", append([]string{"--bootstrap-server", bootstrap}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kafka-acls %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	alice := ab.client(t, "alice")
	produce := func(topic string) error {
		return alice.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
	}
	if err := produce("orders"); err == nil {
		t.Fatal("alice produced before any ACL")
	}
	run("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
	run("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	for _, topic := range []string{"orders", "logs-a"} {
		if err := produce(topic); err != nil {
			t.Errorf("produce to %s after kafka-acls --add: %v", topic, err)
		}
	}
	out := run("--list")
	for _, w := range []string{"name=orders, patternType=LITERAL", "name=logs-, patternType=PREFIXED",
		"principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW"} {
		if !strings.Contains(out, w) {
			t.Errorf("kafka-acls --list lacks %q:\n%s", w, out)
		}
	}
	run("--remove", "--force", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	run("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
	if got := ab.Authorizer().Bindings(acl.Filter{Type: acl.ResourceAny, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermissionAny}); len(got) != 0 {
		t.Errorf("bindings left after kafka-acls --remove: %v", got)
	}
	fresh := ab.client(t, "alice")
	if err := fresh.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("alice produced after her ACL was removed")
	}
}
