package acl

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testenv"
	"github.com/tributary/tributary/internal/zktest"
)

func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type connectFunc = func(context.Context) (coord.Session, error)

// backends are the coordination services every store test runs against.
func backends(t *testing.T) map[string]func(t *testing.T) connectFunc {
	return map[string]func(t *testing.T) connectFunc{
		"memcoord": func(t *testing.T) connectFunc {
			srv := memcoord.NewServer()
			return func(context.Context) (coord.Session, error) { return srv.Connect(memcoord.Config{}), nil }
		},
		"zookeeper": func(t *testing.T) connectFunc {
			connect := zktest.Chroot(t, testenv.ZooKeeper(t), "acl")
			return zkConnect(connect)
		},
	}
}

func zkConnect(connect string) connectFunc {
	return func(ctx context.Context) (coord.Session, error) {
		return zkcoord.Connect(ctx, connect, zkcoord.Config{SessionTimeout: 10 * time.Second, ConnectionTimeout: 20 * time.Second})
	}
}

// newStore starts a store with its own cache, synced.
func newStore(t *testing.T, connect connectFunc) (*Store, *Authorizer) {
	t.Helper()
	a := New(Config{})
	s := NewStore(context.Background(), connect, a, testenv.Logger(t, -4))
	t.Cleanup(func() { _ = s.Close() })
	select {
	case <-s.Synced():
	case <-testContext(t, 60*time.Second).Done():
		t.Fatal("ACL store did not sync")
	}
	return s, a
}

// awaitCache waits until cond holds on a's cache.
func awaitCache(t *testing.T, a *Authorizer, what string, cond func() bool) {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	for {
		ch, _ := a.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("cache never showed %s", what)
		}
	}
}

// TestStoreCreateDeleteAcrossCaches: bindings written through one store
// reach another store's cache through the notifications, the nodes have
// Kafka's JSON, and deleting the last entry of a pattern deletes its node.
func TestStoreCreateDeleteAcrossCaches(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			connect := mk(t)
			w, _ := newStore(t, connect)
			_, other := newStore(t, connect)
			ctx := testContext(t, time.Minute)
			bindings := []Binding{
				{lit(ResourceTopic, "orders"), allow("User:alice", OpRead)},
				{lit(ResourceTopic, "orders"), allow("User:alice", OpDescribe)},
				{pre(ResourceTopic, "logs-"), deny("User:bob", OpWrite)},
				{lit(ResourceCluster, "bad"), allow("User:x", OpAlter)},
			}
			errs := w.Create(ctx, bindings)
			if errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] == nil {
				t.Fatalf("Create errors %v, want only the last", errs)
			}
			awaitCache(t, other, "the created ACLs", func() bool {
				return other.Authorize("User:alice", "h", OpRead, ResourceTopic, "orders") &&
					len(other.Entries(pre(ResourceTopic, "logs-"))) == 1
			})
			sess, err := connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			data, _, err := sess.Get(ctx, "/kafka-acl/Topic/orders")
			if err != nil {
				t.Fatal(err)
			}
			want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:alice","permissionType":"Allow","operation":"Describe","host":"*"}]}`
			if string(data) != want {
				t.Fatalf("node JSON %s, want %s", data, want)
			}
			if _, _, err := sess.Get(ctx, "/kafka-acl-extended/prefixed/Topic/logs-"); err != nil {
				t.Fatalf("prefixed node: %v", err)
			}
			// Creating again changes nothing.
			if errs := w.Create(ctx, bindings[:1]); errs[0] != nil {
				t.Fatal(errs[0])
			}
			res := w.Delete(ctx, []Filter{{Type: ResourceTopic, Name: ptr("orders"), Pattern: PatternLiteral, Operation: OpAny, Permission: PermissionAny}})
			if res[0].Err != nil || len(res[0].Deleted) != 2 {
				t.Fatalf("Delete: %+v", res[0])
			}
			awaitCache(t, other, "the deletion", func() bool {
				return !other.Authorize("User:alice", "h", OpRead, ResourceTopic, "orders")
			})
			if ok, _, err := sess.Exists(ctx, "/kafka-acl/Topic/orders"); err != nil || ok {
				t.Fatalf("node of an emptied pattern: exists %v, %v", ok, err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestKafkaAclCommandZooKeeper: Kafka 2.8's kafka-acls
// --authorizer-properties zookeeper.connect=... writes literal and
// prefixed ACLs that reach our cache, lists what we write, and removes
// them again.
func TestKafkaAclCommandZooKeeper(t *testing.T) {
	tools := testenv.Kafka28Tools(t)
	connect := zktest.Chroot(t, testenv.ZooKeeper(t), "acl-tool")
	ctx := testContext(t, 4*time.Minute)
	// Kafka's ZooKeeper client does not create the chroot.
	sess, err := zkConnect(connect)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	s, a := newStore(t, zkConnect(connect))
	run := func(args ...string) string {
		t.Helper()
		cmd := tools.Command(ctx, "kafka.admin.AclCommand", append([]string{"--authorizer-properties", "zookeeper.connect=" + connect}, args...)...)
		return runTool(t, cmd)
	}
	run("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--group", "g1")
	run("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "Write", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	awaitCache(t, a, "the tool's ACLs", func() bool {
		return a.Authorize("User:alice", "10.0.0.1", OpRead, ResourceTopic, "orders") &&
			a.Authorize("User:alice", "10.0.0.1", OpDescribe, ResourceGroup, "g1") &&
			slices.Equal(a.Entries(pre(ResourceTopic, "logs-")), []Entry{{Principal: "User:bob", Host: "10.0.0.1", Operation: OpWrite, Permission: Deny}})
	})
	if errs := s.Create(ctx, []Binding{{pre(ResourceGroup, "app-"), allow("User:carol", OpRead)}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	out := run("--list", "--resource-pattern-type", "any")
	for _, w := range []string{"name=app-, patternType=PREFIXED", "principal=User:carol, host=*, operation=READ, permissionType=ALLOW",
		"name=orders, patternType=LITERAL", "name=logs-, patternType=PREFIXED"} {
		if !strings.Contains(out, w) {
			t.Fatalf("kafka-acls --list lacks %q:\n%s", w, out)
		}
	}
	run("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	run("--remove", "--force", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	awaitCache(t, a, "the tool's removals", func() bool {
		return !a.Authorize("User:alice", "10.0.0.1", OpRead, ResourceTopic, "orders") &&
			len(a.Entries(pre(ResourceTopic, "logs-"))) == 0 &&
			a.Authorize("User:alice", "10.0.0.1", OpRead, ResourceGroup, "g1")
	})
}

func runTool(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args[len(cmd.Args)-6:], " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
