package sasl

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/internal/testkit/zktest"
)

// runConfigCommand runs Kafka 2.8's kafka-configs (kafka.admin.ConfigCommand)
// against ZooKeeper and returns its output, failing t unless it exits 0.
func runConfigCommand(t *testing.T, ctx context.Context, tools testenv.KafkaTools, args ...string) string {
	t.Helper()
	cmd := tools.Command(ctx, "kafka.admin.ConfigCommand", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafka-configs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestKafkaConfigCommandUsers: a user created by Kafka 2.8's
// `kafka-configs --zookeeper … --alter --entity-type users --add-config
// SCRAM-…` reaches the credential cache through ZooKeeper and logs in with
// franz-go's SCRAM client for both mechanisms (iterations as given), a
// wrong password is refused, and the tool's --delete-config removes it from
// the cache.
func TestKafkaConfigCommandUsers(t *testing.T) {
	tools := testenv.Kafka28Tools(t)
	connect := zktest.Chroot(t, testenv.ZooKeeper(t), "sasl")
	ctx := testenv.Context(t, 3*time.Minute)
	st := NewCredentialStore(ctx, func(ctx context.Context) (coord.Session, error) {
		return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	}, nil)
	t.Cleanup(func() { _ = st.Close() })
	select {
	case <-st.Synced():
	case <-ctx.Done():
		t.Fatal("credential store did not sync with ZooKeeper")
	}

	runConfigCommand(t, ctx, tools, "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]")
	if err := st.Await(ctx, func(lookup func(string, string) (ScramCredential, bool)) bool {
		_, a := lookup("alice", ScramSHA256)
		_, b := lookup("alice", ScramSHA512)
		return a && b
	}); err != nil {
		t.Fatalf("alice, created by kafka-configs, never reached the cache: %v", err)
	}
	out := runConfigCommand(t, ctx, tools, "--zookeeper", connect, "--describe", "--entity-type", "users", "--entity-name", "alice")
	t.Logf("kafka-configs --describe: %s", out)
	if c, _ := st.Lookup("alice", ScramSHA256); !strings.Contains(out, "SCRAM-SHA-256="+c.String()) {
		t.Errorf("kafka-configs --describe does not show the cached SCRAM-SHA-256 credential %s:\n%s", c, out)
	}
	if c, _ := st.Lookup("alice", ScramSHA256); c.Iterations != 8192 {
		t.Errorf("SCRAM-SHA-256 iterations %d, want 8192", c.Iterations)
	}
	if c, _ := st.Lookup("alice", ScramSHA512); c.Iterations != MinIterations {
		t.Errorf("SCRAM-SHA-512 iterations %d, want Kafka's default 4096", c.Iterations)
	}
	a := scramAuthenticator(t, st)
	for name, mech := range map[string]func(scram.Auth) kgosaslMechanism{ScramSHA256: sha256Mech, ScramSHA512: sha512Mech} {
		sess, err := login(t, a, mech(scram.Auth{User: "alice", Pass: "alice-secret"}))
		if err != nil {
			t.Errorf("%s login of alice: %v (%s)", name, err, Reason(err))
		} else if sess.Principal() != "User:alice" {
			t.Errorf("%s principal %q", name, sess.Principal())
		}
		if _, err := login(t, a, mech(scram.Auth{User: "alice", Pass: "alice-wrong"})); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("%s login with a wrong password: %v, want ErrAuthenticationFailed", name, err)
		}
	}

	runConfigCommand(t, ctx, tools, "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "SCRAM-SHA-256,SCRAM-SHA-512")
	if err := st.Await(ctx, func(lookup func(string, string) (ScramCredential, bool)) bool {
		_, a := lookup("alice", ScramSHA256)
		_, b := lookup("alice", ScramSHA512)
		return !a && !b
	}); err != nil {
		t.Fatalf("alice, removed by kafka-configs, is still in the cache: %v", err)
	}
	if _, err := login(t, a, sha256Mech(scram.Auth{User: "alice", Pass: "alice-secret"})); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("login of removed alice: %v, want ErrAuthenticationFailed", err)
	}
}
