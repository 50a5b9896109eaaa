package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/tributary/tributary/broker/config"
	"github.com/tributary/tributary/broker/sasl"
	"github.com/tributary/tributary/internal/coord/zkcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestZooKeeperSetACL: with zookeeper.set.acl=true and the brokers'
// digest identity, the credentials the broker writes under /config/users
// are readable by that identity only: an unauthenticated session, or one
// with another identity, is refused (ZooKeeper enforces ACLs per node even
// when it does not require authentication), while the broker reads them
// and logs the user in; other nodes stay world-readable.
func TestZooKeeperSetACL(t *testing.T) {
	connect := zkTestChroot(t)
	const identity = "brokers:zk-secret"
	t.Cleanup(func() {
		// After the broker closes: its nodes only the identity may delete.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := zkcoord.Connect(ctx, connect, zkcoord.Config{DigestAuth: identity})
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer s.Close()
		var remove func(p string)
		remove = func(p string) {
			kids, _, _ := s.Children(ctx, p)
			for _, k := range kids {
				remove(strings.TrimSuffix(p, "/") + "/" + k)
			}
			if p != "/" {
				_ = s.Delete(ctx, p, -1)
			}
		}
		remove("/")
	})
	b := newSASLBroker(t, func(c *config.Config) {
		c.BrokerID, c.ZooKeeperConnect, c.ZooKeeperSessionTimeout = 1, connect, 6*time.Second
		c.ZooKeeperAuth = config.ZooKeeperAuth{SetACL: true, Digest: identity}
	})
	ctx := testenv.Context(t, time.Minute)
	session := func(digest string) *zkcoord.Session {
		t.Helper()
		s, err := zkcoord.Connect(ctx, connect, zkcoord.Config{DigestAuth: digest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	node := "/config/users/" + sasl.SanitizeUser("alice")
	for name, s := range map[string]*zkcoord.Session{"unauthenticated": session(""), "another identity": session("mallory:guess")} {
		if _, _, err := s.Get(ctx, node); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s session reading %s: %v, want NoAuth", name, node, err)
		}
		if _, _, err := s.Children(ctx, "/config/users"); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s session listing /config/users: %v, want NoAuth", name, err)
		}
		if _, _, err := s.Children(ctx, "/brokers/ids"); err != nil {
			t.Errorf("%s session listing /brokers/ids: %v, want it world-readable", name, err)
		}
		if _, err := s.Create(ctx, "/brokers/ids/99", nil, 0); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s session registering a broker: %v, want NoAuth", name, err)
		}
	}
	data, _, err := session(identity).Get(ctx, node)
	if err != nil || len(data) == 0 {
		t.Fatalf("the brokers' identity reading %s: %q %v", node, data, err)
	}
	if resp := rawLogin(dialRaw(t, b.ListenerAddr("SASL_PLAINTEXT")), mechanism(sasl.ScramSHA256, "alice", aliceSecret)); resp.ErrorCode != 0 {
		t.Errorf("alice's login: code %d", resp.ErrorCode)
	}
}

// TestZooKeeperAuthConfig: the keys parse, and zookeeper.set.acl without
// an identity is refused naming the key.
func TestZooKeeperAuthConfig(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"log.dirs": t.TempDir(), "zookeeper.connect": "127.0.0.1:2181", "zookeeper.set.acl": "true"}
	}
	if _, _, err := config.FromProperties(base()); err == nil || !errors.Is(err, config.ErrInvalidConfig) {
		t.Errorf("zookeeper.set.acl without zookeeper.digest.auth: %v", err)
	}
	p := base()
	p["zookeeper.digest.auth"] = "brokers:secret"
	c, warnings, err := config.FromProperties(p)
	if err != nil || len(warnings) > 0 || !c.ZooKeeperAuth.SetACL || c.ZooKeeperAuth.Digest != "brokers:secret" {
		t.Errorf("config %+v, warnings %v, err %v", c.ZooKeeperAuth, warnings, err)
	}
}
