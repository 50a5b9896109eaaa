package quota

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/broker/entityconfig"
	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/coord/memcoord"
)

func newMemStore(t *testing.T) (*Store, coord.Session) {
	t.Helper()
	srv := memcoord.NewServer()
	s := NewStore(context.Background(), func(context.Context) (coord.Session, error) {
		return srv.Connect(memcoord.Config{}), nil
	}, nil)
	t.Cleanup(func() { _ = s.Close() })
	raw := srv.Connect(memcoord.Config{})
	t.Cleanup(func() { _ = raw.Close() })
	return s, raw
}

// TestStoreKeepsOtherKeysAndFollowsWriters: Alter leaves a user's SCRAM
// credential in place, a write by another writer (Kafka's ConfigCommand,
// here entityconfig.Update on a raw session) reaches the cache through its
// notification, and a removed quota leaves the cache.
func TestStoreKeepsOtherKeysAndFollowsWriters(t *testing.T) {
	s, raw := newMemStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := Entity{User: Named("alice")}
	if _, err := entityconfig.Update(ctx, raw, alice.Path(), false, func(cfg map[string]string) error {
		cfg["SCRAM-SHA-256"] = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Alter(ctx, alice, Values{ProducerByteRate: 1024, RequestPercentage: 50.5}, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := entityconfig.Read(ctx, raw, alice.Path())
	if err != nil {
		t.Fatal(err)
	}
	if cfg["SCRAM-SHA-256"] == "" || cfg[ProducerByteRate] != "1024" || cfg[RequestPercentage] != "50.5" {
		t.Fatalf("node after Alter: %v", cfg)
	}
	loaderDefault := Entity{User: DefaultName, Client: Named("loader")}
	if _, err := entityconfig.Update(ctx, raw, loaderDefault.Path(), false, func(cfg map[string]string) error {
		cfg[ConsumerByteRate] = "2048"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Await(ctx, func(c map[Entity]Values) bool {
		return c[alice][ProducerByteRate] == 1024 && c[loaderDefault][ConsumerByteRate] == 2048
	}); err != nil {
		t.Fatalf("cache never showed both quotas: %v", s.Cached())
	}
	if l, tags, ok := s.Limit(ConsumerByteRate, "bob", "loader"); !ok || l != 2048 || tags != (Tags{"bob", "loader"}) {
		t.Fatalf("bob/loader consumer quota %v %+v %v", l, tags, ok)
	}
	if err := s.Alter(ctx, alice, nil, []string{ProducerByteRate, RequestPercentage}); err != nil {
		t.Fatal(err)
	}
	if err := s.Await(ctx, func(c map[Entity]Values) bool { _, ok := c[alice]; return !ok }); err != nil {
		t.Fatalf("alice's quotas still cached: %v", s.Cached())
	}
	cfg, _, _ = entityconfig.Read(ctx, raw, alice.Path())
	if cfg["SCRAM-SHA-256"] == "" || len(cfg) != 1 {
		t.Fatalf("node after removing the quotas: %v", cfg)
	}
	all, err := s.Read(ctx)
	if err != nil || len(all) != 1 || all[loaderDefault][ConsumerByteRate] != 2048 {
		t.Fatalf("Read: %v %v", all, err)
	}
	// Bad values are refused before anything is written.
	if err := s.Alter(ctx, alice, Values{ProducerByteRate: -1}, nil); err == nil {
		t.Fatal("negative rate accepted")
	}
	if err := s.Alter(ctx, alice, nil, []string{"bogus"}); err == nil {
		t.Fatal("unknown key removal accepted")
	}
}
