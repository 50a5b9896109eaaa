package sasl

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

func has(user, mech string) func(func(string, string) (ScramCredential, bool)) bool {
	return func(lookup func(string, string) (ScramCredential, bool)) bool { _, ok := lookup(user, mech); return ok }
}

func hasNot(user, mech string) func(func(string, string) (ScramCredential, bool)) bool {
	return func(lookup func(string, string) (ScramCredential, bool)) bool {
		_, ok := lookup(user, mech)
		return !ok
	}
}

// TestCredentialStoreFollowsChanges: a user written through one store (and
// through raw nodes, as Kafka's ConfigCommand writes them) reaches another
// store's cache through the change notifications, logs in, and is gone
// from the cache once removed; the other keys of the user node are kept.
func TestCredentialStoreFollowsChanges(t *testing.T) {
	ctx := testenv.Context(t, time.Minute)
	writer, srv := newMemStore(t)
	reader := NewCredentialStore(ctx, func(context.Context) (coord.Session, error) {
		return srv.Connect(memcoord.Config{}), nil
	}, nil)
	t.Cleanup(func() { _ = reader.Close() })

	cred := mustCredential(t, ScramSHA512, "alice-secret", 4096)
	if err := writer.UpdateUser(ctx, "alice", func(cfg map[string]string) error {
		cfg[ScramSHA512] = cred.String()
		cfg["producer_byte_rate"] = "1024"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reader.Await(ctx, has("alice", ScramSHA512)); err != nil {
		t.Fatalf("reader never saw alice: %v", err)
	}
	if _, err := login(t, scramAuthenticator(t, reader), scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()); err != nil {
		t.Errorf("alice through the reader's cache: %v", err)
	}

	// As Kafka's ConfigCommand --zookeeper does: the node, then the notification.
	raw := srv.Connect(memcoord.Config{})
	defer raw.Close()
	bob := mustCredential(t, ScramSHA256, "b", 4096)
	data, _ := json.Marshal(map[string]any{"version": 1, "config": map[string]string{ScramSHA256: bob.String()}})
	if _, err := raw.Create(ctx, "/config/users/bob%40x", data, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(ctx, "/config/changes/config_change_", []byte(`{"version":2,"entity_path":"users/bob%40x"}`), coord.PersistentSequential); err != nil {
		t.Fatal(err)
	}
	if err := reader.Await(ctx, has("bob@x", ScramSHA256)); err != nil {
		t.Fatalf("reader never saw bob@x: %v", err)
	}

	if err := writer.UpdateUser(ctx, "alice", func(cfg map[string]string) error {
		delete(cfg, ScramSHA512)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reader.Await(ctx, hasNot("alice", ScramSHA512)); err != nil {
		t.Fatalf("reader still has alice: %v", err)
	}
	uc, err := writer.ReadUser(ctx, "alice")
	if err != nil || uc.Config["producer_byte_rate"] != "1024" || len(uc.Config) != 1 {
		t.Errorf("alice's node after the removal: %+v, %v; want only producer_byte_rate", uc, err)
	}

	// A node written without a notification is not seen until the cache
	// loses its session; then it reconnects and reloads everything.
	carol := mustCredential(t, ScramSHA256, "c", 4096)
	data, _ = json.Marshal(map[string]any{"version": 1, "config": map[string]string{ScramSHA256: carol.String()}})
	if _, err := raw.Create(ctx, "/config/users/carol", data, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, ok := reader.Lookup("carol", ScramSHA256); ok {
		t.Fatal("carol seen without a notification")
	}
	for _, id := range srv.Sessions() {
		if id != raw.ID() {
			_ = srv.Expire(id)
		}
	}
	if err := reader.Await(ctx, has("carol", ScramSHA256)); err != nil {
		t.Fatalf("reader did not reload after losing its session: %v", err)
	}
}
